
Bb_scaleJ„