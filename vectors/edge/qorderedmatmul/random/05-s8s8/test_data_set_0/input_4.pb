Bscale_YJO
B