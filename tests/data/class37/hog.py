class Policy:
    """Hoards memory until the run's memory limit stops it. Each step asks for 2 GB at once, more than
    the class test's whole limit (1G), so the first request is refused by the limit before a page is
    touched, however loaded the machine is: 512 MB steps, zero-filled page by page, still took longer
    than --decide-timeout 2 s on a machine at load 10, and the run was named a timeout instead."""

    def decide(self, view):
        hoard = []
        while True:
            hoard.append(bytearray(2 << 30))
