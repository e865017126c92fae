
By_scaleJ$: