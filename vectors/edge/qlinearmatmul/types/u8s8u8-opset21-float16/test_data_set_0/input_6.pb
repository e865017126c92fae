
By_scaleJ_?