class Policy:
    def decide(self, view):
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))
