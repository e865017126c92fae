BYJ0Q´ÄB»úAA¸gBrqé@£ŠB‹
šAB‚AbñÏAIa´B²­˜BúAeBÝD8B