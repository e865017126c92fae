
BsJ
K7K-H»CZI