BbiasJØà¼>y®„¿F¦
?