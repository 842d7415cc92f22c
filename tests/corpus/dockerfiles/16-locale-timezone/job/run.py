print(7)
