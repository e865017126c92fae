
Bb_scaleJV