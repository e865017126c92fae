Bb_zero_pointJÿ
ç