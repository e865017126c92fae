
Bb_scaleJò1