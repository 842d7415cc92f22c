print(9)
