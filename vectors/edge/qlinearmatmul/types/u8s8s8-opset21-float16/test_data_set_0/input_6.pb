
By_scaleJ$J