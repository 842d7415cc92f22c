print("models")
