import numpy as np


class Policy:
    """Hoards memory until the run's memory limit stops it. Each step asks for 512 MB at once (numpy's
    zeros: address space the kernel counts against the limit, its pages not yet touched), so the limit
    (1G in the class test) is reached in a few steps, in milliseconds however loaded the machine is;
    zero-filled steps (bytearray) could take longer than --decide-timeout 2 s on a machine at load 10,
    which the parent then rightly reports as a timeout."""

    def decide(self, view):
        hoard = []
        while True:
            hoard.append(np.zeros(512 << 20, dtype=np.uint8))
