app = None
