
Bb_scaleJÿ{