
Ba_scaleJ¶-