class Policy:
    """Hoards memory until the run's memory limit stops it. Each step asks for 512 MB at once, so the
    limit (1G in the class test) is reached in a few steps however loaded the machine is; small
    steps zero-filled page by page took longer than --decide-timeout 2 s on a machine at load 8."""

    def decide(self, view):
        hoard = []
        while True:
            hoard.append(bytearray(512 << 20))
