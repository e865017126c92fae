
Bb_scaleJr1