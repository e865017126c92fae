
Ba_scaleJ71