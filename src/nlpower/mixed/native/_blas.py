"""Run small dense linear algebra single-threaded.

The native engine's matrices are small (tens to hundreds of columns);
OpenBLAS's threads only add start-up and spin-wait costs there, and on a
loaded machine they make each deviance evaluation ~10x slower.  This module
switches the BLAS libraries loaded by numpy and scipy to one thread inside a
``with`` block and restores the previous setting afterwards.  The libraries
are found by ``threadpoolctl`` (once, on first use); where it finds none it
does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# both BLAS copies (numpy's and scipy's) must be loaded before threadpoolctl looks for them
import numpy  # noqa: F401
import scipy.linalg  # noqa: F401

_lock = threading.Lock()
_libs: list[Any] | None = None


def _find() -> list[Any]:
    """threadpoolctl's controllers of the loaded BLAS libraries (cached: the scan costs ~1 ms)."""
    global _libs
    if _libs is None:
        from threadpoolctl import ThreadpoolController

        _libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _libs


@contextmanager
def single_threaded(enabled: bool = True) -> Iterator[None]:
    """Within the block, BLAS uses one thread (no-op when ``enabled`` is False).

    Only the main thread changes the setting: BLAS's thread count is
    process-wide, so worker threads leave it alone.
    """
    if not enabled:
        yield
        return
    libs = _find()
    if not libs or threading.current_thread() is not threading.main_thread():
        yield
        return
    with _lock:
        before = [lib.num_threads for lib in libs]
        for lib, n in zip(libs, before, strict=True):
            if n is not None and n != 1:
                lib.set_num_threads(1)
    try:
        yield
    finally:
        with _lock:
            for lib, n in zip(libs, before, strict=True):
                if n is not None and n != 1:
                    lib.set_num_threads(n)
