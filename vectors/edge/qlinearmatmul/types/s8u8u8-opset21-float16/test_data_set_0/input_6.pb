
By_scaleJ_G