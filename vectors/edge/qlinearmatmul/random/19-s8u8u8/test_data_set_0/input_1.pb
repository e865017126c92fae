
Ba_scaleJÅ>