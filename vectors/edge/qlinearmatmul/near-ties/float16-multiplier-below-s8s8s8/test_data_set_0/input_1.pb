
Ba_scaleJQ1