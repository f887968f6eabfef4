import os


class Policy:
    def decide(self, view):
        os._exit(3)
