import sys


class Policy:
    def decide(self, view):
        sys.exit(5)
