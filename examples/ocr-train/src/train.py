"""Example business code: the layer that changes on every commit."""
import sys

from ocr import config
from ocr_utils import normalize_box


def main():
    print("training", config.MODEL, "with", config.EPOCHS, "epochs")
    print("normalized box:", normalize_box((10, 20, 110, 220), 1000, 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
