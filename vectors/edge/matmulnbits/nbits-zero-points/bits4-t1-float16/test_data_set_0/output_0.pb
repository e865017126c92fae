
BYJI”ÆáEÂF¡B¨Ê