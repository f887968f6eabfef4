"""A policy written to attack the grader (tests/test_child_messages.py): it writes, to every pipe it
can write to, a message in multiprocessing's framing whose pickle, loaded with plain
``pickle.loads``, would create the file named by ``CRAFTED_MARK`` in the parent."""

import fcntl
import os
import pickle
import stat
import struct


class _Payload:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['CRAFTED_MARK']}",))


class Policy:
    def decide(self, view):
        data = pickle.dumps(("ok", _Payload()))
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_WRONLY:
                    os.write(fd, struct.pack("!i", len(data)) + data)
            except OSError:
                pass
        os._exit(0)
