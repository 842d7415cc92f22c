import cv2  # the headless build provides the same module
print("predict_system")
