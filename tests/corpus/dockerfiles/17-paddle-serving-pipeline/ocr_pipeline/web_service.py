print(8)
