
Bb_scaleJv0