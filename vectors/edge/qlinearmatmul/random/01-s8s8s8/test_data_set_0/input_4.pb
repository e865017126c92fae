Bb_scaleJ
(‰<