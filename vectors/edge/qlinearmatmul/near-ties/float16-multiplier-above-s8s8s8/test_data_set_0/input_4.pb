
Bb_scaleJj0