print("cls")
