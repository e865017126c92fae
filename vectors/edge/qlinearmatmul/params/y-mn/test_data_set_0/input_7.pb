By_zero_pointJгЪ8
йд