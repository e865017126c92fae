
Ba_scaleJ73