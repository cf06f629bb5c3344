"""How Tables 13-15 print: three decimals, every column, parts not in the model marked.

:class:`RatingsTable` is a :class:`pandas.DataFrame` (full precision in its
values, ``.to_dict()``, JSON) whose printed form reads like the paper's tables:
one row per data set, one column per parameter, rounded to 3 decimals, never
truncated (wide tables wrap into blocks), and ``-`` for a parameter that is not
part of the fitted model (its value is 0).  No statistics here.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["RatingsTable"]

#: Printed width before a wide table wraps into blocks of columns.
LINE_WIDTH = 100


class RatingsTable(pd.DataFrame):
    """A results table that prints rounded to 3 decimals and in full.

    ``not_modelled`` lists the columns that are not parameters of the fitted
    model (shown as ``-``; their values are 0).
    """

    _metadata = ["not_modelled"]
    not_modelled: tuple[str, ...]

    @property
    def _constructor(self) -> Any:
        return RatingsTable

    def select(self, columns: list[str]) -> RatingsTable:
        """These columns, as a table that prints the same way."""
        out = RatingsTable(self.loc[:, columns])
        out.not_modelled = tuple(c for c in getattr(self, "not_modelled", ()) if c in columns)
        return out

    def __repr__(self) -> str:
        absent = [c for c in getattr(self, "not_modelled", ()) if c in self.columns]
        shown = pd.DataFrame(
            {c: ["-" if c in absent else _fmt(v) for v in self[c]] for c in self.columns},
            index=self.index,
        )
        text = shown.to_string(line_width=LINE_WIDTH)
        if absent:
            text += "\n- : not in the fitted model (0 in the values)"
        return text

    def __str__(self) -> str:
        return self.__repr__()

    def _shown(self) -> pd.DataFrame:
        absent = set(getattr(self, "not_modelled", ()))
        return pd.DataFrame({c: ["-" if c in absent else _fmt(v) for v in self[c]]
                             for c in self.columns}, index=self.index)

    def to_markdown(self, caption: str | None = None) -> str:  # type: ignore[override]
        """The table as Markdown, 3 decimals (as printed); ``-``: not in the fitted model."""
        from ..display import to_markdown
        return to_markdown(self._shown(), caption=caption)

    def to_latex(self, caption: str | None = None, label: str | None = None  # type: ignore[override]
                 ) -> str:
        """The table as a booktabs LaTeX table, 3 decimals (as printed)."""
        from ..display import to_latex
        return to_latex(self._shown(), caption=caption, label=label)

    def _repr_html_(self) -> str:
        from ..display import to_html
        return to_html(self._shown())


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.3f}"
    except (TypeError, ValueError):
        return str(value)
