print(6)
