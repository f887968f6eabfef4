"""EVO-GP core (SPEC §6) as engine-independent array code.

``priority``: priority functions as expression DAGs; ``planner``: Algorithm 2
for one cluster; ``objective``: Eq. 2-5; ``allocation``: MCT and the
allocation EA (Algorithm 1).
"""

from simsched.evo.numba_cache import ensure_writable_cache

ensure_writable_cache()  # before any kernel module defines a cache=True function
