
By_scaleJÿ{