
Bb_scaleJl/Þ0†/.