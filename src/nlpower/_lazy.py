"""Modules bound at the top of a module but imported on first attribute access.

``from .._lazy import special`` reads like ``from scipy import special`` at
its call sites, while ``import nlpower`` and a first Gaussian fit, which do
not call it, never pay for importing it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "special"]


class LazyModule:
    """A stand-in for the module ``name``, imported when an attribute is first read.

    Examples
    --------
    >>> math = LazyModule("math")
    >>> math.sqrt(4.0)
    2.0
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<lazy module {self._name!r} ({state})>"


#: ``scipy.special``, imported on first use.
special: Any = LazyModule("scipy.special")
