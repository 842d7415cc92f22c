print("ocr")
