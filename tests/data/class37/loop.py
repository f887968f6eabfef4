class Policy:
    def decide(self, view):
        while True:
            pass
