
Bb_scaleJ.4f1¸1