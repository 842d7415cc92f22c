print("infer")
