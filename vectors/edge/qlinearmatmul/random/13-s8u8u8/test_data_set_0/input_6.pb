
By_scaleJÈ7