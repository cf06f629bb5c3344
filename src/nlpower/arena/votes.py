"""Votes between pairs of systems: read a table, validate it once, encode it.

A vote names system A, system B and the outcome: A wins, B wins or a tie.
The outcome column may hold ``"a"``/``"b"``/``"tie"`` (any case; Chatbot
Arena's ``"model_a"``, ``"model_b"``, ``"tie"``, ``"tie (bothbad)"``), the
winning system's name, or numbers ``1`` (A wins), ``0`` (B wins) and ``0.5``
(tie).  Optional columns: a count of identical votes, the worker who voted
and the prompt voted on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..ratings.files import read_table, rows_at
from .likelihood import A_WINS, B_WINS, TIE

__all__ = ["VoteData", "encode_votes", "read_votes"]

_A_WORDS = {"a", "model_a", "win", "a wins", "1", "1.0"}
_B_WORDS = {"b", "model_b", "loss", "b wins", "0", "0.0"}
_TIE_WORDS = {"tie", "draw", "tie (bothbad)", "both bad", "both good", "0.5"}


@dataclass(frozen=True)
class VoteData:
    """Encoded votes: system indices, outcome codes (0 A, 1 B, 2 tie) and counts."""

    systems: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    count: np.ndarray
    groups: Mapping[str, np.ndarray]
    group_levels: Mapping[str, tuple[str, ...]]

    @property
    def n_votes(self) -> int:
        return int(self.count.sum())

    @property
    def n_ties(self) -> int:
        return int(self.count[self.outcome == TIE].sum())

    def subset(self, keep: np.ndarray) -> VoteData:
        return VoteData(self.systems, self.a[keep], self.b[keep], self.outcome[keep],
                        self.count[keep], {k: v[keep] for k, v in self.groups.items()},
                        self.group_levels)


def read_votes(path: str | os.PathLike[str], *, sep: str | None = None,
               encoding: str | None = None) -> pd.DataFrame:
    """Read a CSV, TSV, JSON (lines) or Parquet file of votes as a data frame.

    The rating files' reader: an empty, binary, UTF-16 or damaged file is
    refused in words (:class:`~nlpower.errors.RatingsError`), and later
    messages name a row as the line an editor shows (``frame.attrs``
    keeps where the rows came from).  ``sep`` and ``encoding`` are as in
    :func:`nlpower.read_ratings` (default: comma, or tab for ``.tsv``; UTF-8).
    """
    return read_table(path, "votes", sep=sep, encoding=encoding)


def _outcome_codes(values: pd.Series, a: pd.Series, b: pd.Series, column: str,
                   role: str = "outcome") -> np.ndarray:
    text = values.astype(str).str.strip()
    low = text.str.lower()
    codes = np.full(len(values), -1, dtype=np.int64)
    codes[low.isin(_A_WORDS).to_numpy()] = A_WINS
    codes[low.isin(_B_WORDS).to_numpy()] = B_WINS
    codes[low.isin(_TIE_WORDS).to_numpy()] = TIE
    is_a, is_b = (text == a.astype(str)).to_numpy(), (text == b.astype(str)).to_numpy()
    named = np.where(is_a, A_WINS, np.where(is_b, B_WINS, -1))
    clash = (codes >= 0) & (named >= 0) & (codes != named)
    if clash.any():
        row = int(np.flatnonzero(clash)[0])
        raise InputError(
            f"{role} column {column!r} is ambiguous: {text.iloc[row]!r} in a vote of "
            f"{a.astype(str).iloc[row]!r} against {b.astype(str).iloc[row]!r} is both an outcome "
            "code (1: A wins, 0: B wins) and a system's name. Write the outcome as 'a'/'b'/'tie' "
            "(or rename the systems)."
        )
    codes[(is_a & (codes < 0))] = A_WINS     # winner's name
    codes[(is_b & (codes < 0))] = B_WINS
    bad = codes < 0
    if bad.any():
        shown = sorted(set(text[bad].tolist()))[:5]
        raise InputError(
            f"{role} column {column!r} has values that are not an outcome: {shown}. Use "
            "'a'/'b'/'tie' (or 'model_a'/'model_b'/'tie'), the winning system's name, or "
            "1 (A wins) / 0 (B wins) / 0.5 (tie)."
        )
    return codes


def _column(frame: pd.DataFrame, role: str, name: Any) -> pd.Series:
    if not isinstance(name, str) or name not in frame.columns:
        raise InputError(f"{role}={name!r} is not a column of the votes; columns are "
                         f"{list(map(str, frame.columns))}. Pass {role}= the column's name.")
    col = frame[name]
    if col.isna().any():
        rows = np.flatnonzero(col.isna().to_numpy())
        raise InputError(f"column {name!r} ({role}) has missing values at "
                         f"{rows_at(frame, rows)}; drop or fill those votes first.")
    return col


def encode_votes(
    votes: Any,
    *,
    a: str,
    b: str,
    outcome: str,
    count: str | None = None,
    groups: Mapping[str, str | None] | None = None,
    names: Mapping[str, str] | None = None,
) -> VoteData:
    """Validate a frame of votes and encode it (see the module docstring).

    ``names`` renames the arguments in messages, e.g. ``{"outcome": "choice"}``
    for a caller whose own argument feeds ``outcome``.
    """
    names = dict(names or {})
    if not isinstance(votes, pd.DataFrame):
        raise InputError(f"votes must be a pandas DataFrame (one row per vote) or a file path; "
                         f"got {type(votes).__name__}. Read the file with nlpower.arena.read_votes.")
    if len(votes) == 0:
        raise InputError("votes has no rows; pass at least one vote per compared pair.")
    col_a = _column(votes, names.get("a", "a"), a)
    col_b = _column(votes, names.get("b", "b"), b)
    sa, sb = col_a.astype(str), col_b.astype(str)
    same = (sa == sb).to_numpy()
    if same.any():
        rows = np.flatnonzero(same)
        raise InputError(f"{rows_at(votes, rows)}: {len(rows)} vote(s) compare a system with "
                         f"itself (first: {sa.iloc[rows[0]]!r}); every vote needs two different "
                         "systems. Drop those rows.")
    role = names.get("outcome", "outcome")
    codes = _outcome_codes(_column(votes, role, outcome), sa, sb, outcome, role)
    systems = tuple(sorted(set(sa) | set(sb)))
    if len(systems) < 2:
        raise InputError("the votes compare fewer than two systems; nothing to rank.")
    index = {s: i for i, s in enumerate(systems)}
    n = np.ones(len(votes))
    if count is not None:
        n = pd.to_numeric(_column(votes, "count", count), errors="coerce").to_numpy(float)
        if not np.all(np.isfinite(n)) or (n < 0).any():
            raise InputError(f"count column {count!r} must hold non-negative numbers of votes.")
    group_codes: dict[str, np.ndarray] = {}
    group_levels: dict[str, tuple[str, ...]] = {}
    for role, name in (groups or {}).items():
        if name is None:
            continue
        col = _column(votes, role, name).astype(str)
        levels, inverse = np.unique(col.to_numpy(), return_inverse=True)
        group_codes[role], group_levels[role] = inverse, tuple(levels.tolist())
    return VoteData(systems, sa.map(index).to_numpy(np.int64), sb.map(index).to_numpy(np.int64),
                    codes, n, group_codes, group_levels)
