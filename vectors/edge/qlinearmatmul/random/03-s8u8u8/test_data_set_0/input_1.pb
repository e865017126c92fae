
Ba_scaleJÛ