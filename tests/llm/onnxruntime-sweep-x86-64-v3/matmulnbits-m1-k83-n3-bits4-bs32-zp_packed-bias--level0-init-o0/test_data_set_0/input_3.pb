Bzero_pointsJÜ
Òd± 