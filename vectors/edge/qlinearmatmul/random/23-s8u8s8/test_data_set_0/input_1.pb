
Ba_scaleJ€6