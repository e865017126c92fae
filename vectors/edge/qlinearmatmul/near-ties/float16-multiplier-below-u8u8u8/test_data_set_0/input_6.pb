
By_scaleJÖ: