print(4)
