
By_scaleJC