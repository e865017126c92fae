
By_scaleJ=