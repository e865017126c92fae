
BYJe«|BPµLº’∏º