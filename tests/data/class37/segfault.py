import ctypes


class Policy:
    def decide(self, view):
        ctypes.string_at(0)
