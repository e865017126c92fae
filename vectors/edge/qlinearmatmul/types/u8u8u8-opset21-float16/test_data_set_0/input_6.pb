
By_scaleJ*G