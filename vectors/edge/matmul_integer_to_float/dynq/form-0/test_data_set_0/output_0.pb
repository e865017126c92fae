BYJ0C,)EÔ÷?EH"Eø\/E>$1E’¾8EcE 
EO…E´DEJþD‚ßüD