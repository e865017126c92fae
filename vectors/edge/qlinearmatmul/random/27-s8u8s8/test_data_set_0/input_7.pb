By_zero_pointJ
