By_scaleJ:¸
?