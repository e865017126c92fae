BBJ°ŸÇ
Gi™VN€ÿ‹n®