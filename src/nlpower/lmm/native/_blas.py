"""Run small dense linear algebra single-threaded.

The native engine's matrices are small (tens to hundreds of columns);
OpenBLAS's threads only add start-up and spin-wait costs there, and on a
loaded machine they make each deviance evaluation ~10x slower.  This module
finds the OpenBLAS libraries loaded by numpy and scipy (Linux
``/proc/self/maps``) and switches them to one thread inside a ``with``
block, restoring the previous setting afterwards.  Where the libraries
cannot be found (other platforms, other BLAS) it does nothing.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# both BLAS copies (numpy's and scipy's) must be loaded before /proc/self/maps is read
import numpy  # noqa: F401
import scipy.linalg  # noqa: F401

_NAMES = (
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)

_lock = threading.Lock()
_libs: list[tuple[Any, Any]] | None = None


def _find() -> list[tuple[Any, Any]]:
    global _libs
    if _libs is not None:
        return _libs
    found: list[tuple[Any, Any]] = []
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({ln.split()[-1] for ln in fh
                            if "openblas" in ln.lower() and ".so" in ln.split()[-1]})
        for path in paths:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for get_name, set_name in _NAMES:
                get_f = getattr(lib, get_name, None)
                set_f = getattr(lib, set_name, None)
                if get_f is not None and set_f is not None:
                    get_f.restype = ctypes.c_int
                    set_f.argtypes = [ctypes.c_int]
                    found.append((get_f, set_f))
                    break
    except OSError:
        found = []
    _libs = found
    return found


@contextmanager
def single_threaded(enabled: bool = True) -> Iterator[None]:
    """Within the block, OpenBLAS uses one thread (no-op when ``enabled`` is False)."""
    if not enabled:
        yield
        return
    libs = _find()
    if not libs or threading.current_thread() is not threading.main_thread():
        yield
        return
    with _lock:
        before = [int(g()) for g, _ in libs]
        for (_, s), n in zip(libs, before, strict=True):
            if n != 1:
                s(1)
    try:
        yield
    finally:
        with _lock:
            for (_, s), n in zip(libs, before, strict=True):
                if n != 1:
                    s(n)
