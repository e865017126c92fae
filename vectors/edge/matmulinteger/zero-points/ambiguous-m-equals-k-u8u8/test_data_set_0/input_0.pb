BAJ’
;œÒvB|n¨Y¨“OX