class Policy:
    """Hoards memory until the run's memory limit stops it. Each step asks for 2 GB at once, more than
    the whole limit (1G in the class test): the allocation is refused before a page is touched, so the
    limit stops it at once however loaded the machine is (512 MB steps, zero-filled, took longer than
    --decide-timeout 2 s at load 11 when two of them fitted under the limit)."""

    def decide(self, view):
        hoard = []
        while True:
            hoard.append(bytearray(2 << 30))
