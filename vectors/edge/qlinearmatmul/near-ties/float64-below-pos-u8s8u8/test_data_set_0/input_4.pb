Bb_scaleJ6d
>