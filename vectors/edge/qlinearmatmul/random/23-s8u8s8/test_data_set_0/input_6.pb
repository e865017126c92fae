
By_scaleJþOÚN™P