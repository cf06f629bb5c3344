"""Refusing, before allocating, a computation whose arrays cannot fit in memory.

A design of 10^5 workers x 10^5 items has 2 x 10^10 ratings: the simulate
path would start allocating tens of GiB and end in a ``MemoryError`` (or the
operating system's out-of-memory killer) long after the call.
:func:`check_fits` compares a lower bound of what a computation needs with
the machine's physical memory and refuses up front, with both sizes.
"""

from __future__ import annotations

import os

from .errors import InputError

__all__ = ["BYTES_PER_RATING", "check_fits", "physical_memory"]

#: A lower bound of the bytes one rating costs on the simulate path: the layout's worker, item
#: and system codes and two combined codes (8 bytes each), the response, the fitted values
#: and the residuals (8 bytes each).
BYTES_PER_RATING = 8 * 8


def physical_memory() -> int | None:
    """This machine's physical memory in bytes (``None`` where it cannot be read)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_fits(n_rows: int, what: str, *, bytes_per_row: int = BYTES_PER_RATING,
               hint: str = "") -> None:
    """Refuse ``what`` if ``n_rows`` rows need more than the machine's memory.

    Examples
    --------
    >>> check_fits(1000, "the simulate path")
    >>> check_fits(2 * 10**10, "the simulate path of a 100000 x 100000 design")
    Traceback (most recent call last):
    ...
    nlpower.errors.InputError: the simulate path of a 100000 x 100000 design needs at least ...
    """
    need = n_rows * bytes_per_row
    have = physical_memory()
    if have is not None and need > have:
        raise InputError(f"{what} needs at least {_gib(need)} of memory for its {n_rows:,} "
                         f"ratings, more than this machine's {_gib(have)}; nothing was "
                         f"allocated.{hint}")
