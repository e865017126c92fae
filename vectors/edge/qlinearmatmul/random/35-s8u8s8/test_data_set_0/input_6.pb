
By_scaleJš@