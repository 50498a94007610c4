"""A job's per-trace work as tasks of a Dask cluster (``atenmap kernel --from-trace DIR --scheduler
ADDRESS``), for jobs one machine cannot read in time (thousands of rank traces). No scheduler of
our own: Dask's ``distributed.Client`` places the tasks, retries lost workers and returns results
in order. Optional: ``pip install 'atenmap[dask]'``.

Note [A scheduler that cannot be reached]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The address is resolved first (``distributed.comm.resolve_address``: ValueError for one it cannot
parse, OSError for a host name that does not resolve): a ``Client`` made with such an address and
left half-made prints a traceback from its ``__del__`` when Python exits. ``Client(address)`` then
raises OSError (refused or timed out: after Dask's connect timeout,
``distributed.comm.timeouts.connect``, 30 s unless configured) or TimeoutError. Each is one line
naming the address (AtenmapError: exit 1, no traceback). Once connected, an error inside a task is not caught: the task function returns
a trace's own AtenmapError as its line, so what reaches ``gather`` is a bug, shown as one.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from atenmap.errors import AtenmapError


def map_on_dask(address: str, fn: Callable, *args) -> list:
    """``[fn(*fixed, x) for x in args[-1]]`` computed as one Dask task per ``x`` on the cluster whose
    scheduler is at ``address``, in the order given. ``args``: the arguments every call shares
    (small and picklable), then the list mapped over."""
    try:
        from distributed import Client
        from distributed.comm import resolve_address
    except ImportError:
        raise AtenmapError("--scheduler runs on Dask, which is not installed here: "
                           "pip install 'atenmap[dask]'") from None
    *fixed, items = args
    try:
        resolve_address(address)  # before Client: a half-made Client left for exit prints a traceback
        client = Client(address, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc).strip() else exc.__class__.__name__
        raise AtenmapError(f"cannot reach the Dask scheduler at {address!r}: {why}") from None
    with client:
        futures = client.map(partial(fn, *fixed), items, pure=False)
        return client.gather(futures)
