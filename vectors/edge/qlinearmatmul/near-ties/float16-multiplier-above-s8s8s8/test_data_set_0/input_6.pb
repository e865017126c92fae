
By_scaleJ¾@