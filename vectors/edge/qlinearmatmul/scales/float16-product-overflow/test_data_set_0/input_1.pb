
Ba_scaleJS{