By_scaleJ
²f@