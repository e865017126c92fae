
By_scaleJK8