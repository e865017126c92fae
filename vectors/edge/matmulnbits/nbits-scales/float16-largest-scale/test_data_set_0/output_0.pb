
BYJühühühühühüh