"""The result of every inference verb: a titled table with notes and its displays."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import display

__all__ = ["InferenceTable"]


@dataclass(frozen=True, eq=False)
class InferenceTable:
    """A table of intervals, tests, marginal means or contrasts.

    Attributes
    ----------
    title : str
        What the table is, e.g. ``"Profile confidence intervals (95%)"``.
    frame : DataFrame
        The numbers (read them with :meth:`to_frame`, which copies).
    notes : tuple of str
        How they were computed (df method, adjustment, refits), printed under the table.
    """

    title: str
    frame: pd.DataFrame = field(repr=False)
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame (a copy)."""
        return self.frame.copy()

    def summary(self, digits: int = 4) -> str:
        """Plain text: title, table, notes."""
        body = self.frame.to_string(float_format=lambda v: display.format_cell(v, digits=digits))
        return "\n".join([self.title, body, *self.notes])

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table (title as caption, notes below)."""
        text = display.to_markdown(self.frame, digits=digits, caption=self.title)
        return "\n".join([text, *(["", *self.notes] if self.notes else [])])

    def to_latex(self, digits: int = 4, label: str | None = None) -> str:
        """A booktabs LaTeX table (title as caption, notes below)."""
        return display.to_latex(self.frame, digits=digits, caption=self.title, label=label,
                                notes=self.notes)

    def _repr_html_(self) -> str:
        return display.to_html(self.frame, caption=self.title, notes=self.notes)

    def __getitem__(self, key: Any) -> Any:
        return self.frame[key]

    def __len__(self) -> int:
        return len(self.frame)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"InferenceTable({self.title!r}, {len(self.frame)} rows)"
