
Ba_scaleJ=0