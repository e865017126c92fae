
By_scaleJMD