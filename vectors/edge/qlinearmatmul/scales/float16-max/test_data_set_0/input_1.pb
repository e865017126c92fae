
Ba_scaleJÿ{