"""System outputs and references: reading, validation and sacrebleu's per-sentence statistics.

sacrebleu is an optional extra (``pip install 'nlpower[bleu]'``), imported
lazily here and nowhere else, so that BLEU *power* (which needs no text)
works without it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np

from .._inputs import read_text
from .._validation import check_choice
from ..errors import EngineUnavailableError, InputError

__all__ = ["Lines", "References", "read_lines", "read_references", "segment_statistics", "sacrebleu"]

#: One stream of sentences: a file path (str or Path) or the lines themselves.
Lines: TypeAlias = "str | os.PathLike[str] | Sequence[str]"
#: References: one stream (a path, or a list of lines), or several (a list of paths
#: given as ``Path`` objects, or a list of lists of lines).
References: TypeAlias = "str | os.PathLike[str] | Sequence[str] | Sequence[os.PathLike[str] | Sequence[str]]"

_INSTALL_HINT = "pip install 'nlpower[bleu]'"


def sacrebleu() -> ModuleType:
    """The ``sacrebleu`` module, or an :class:`EngineUnavailableError` with the install hint."""
    try:
        import sacrebleu as module  # noqa: PLC0415 - lazy: optional extra, only text needs it
    except ImportError as exc:  # pragma: no cover - sacrebleu is installed in development
        raise EngineUnavailableError(
            f"Computing BLEU from system outputs needs sacrebleu, which is not installed. "
            f"Install it with: {_INSTALL_HINT}") from exc
    return module


def _read_file(name: str, path: str | os.PathLike[str]) -> list[str]:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{name}: file {str(p)!r} not found. Pass an existing file or a list of lines.")
    # universal newlines, like sacrebleu's reader
    text = read_text(p, f"{name}: file").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_lines(name: str, source: Any, *, empty_lines: bool = False) -> list[str]:
    """One stream of sentences from a path or a sequence of strings, validated.

    Raises an :class:`InputError` naming ``name`` for a wrong type, a missing
    file, an empty stream or -- unless ``empty_lines`` (hypotheses: an empty
    line is valid MT output, scored as sacrebleu scores it) -- empty lines
    (listing the first line numbers).
    """
    if isinstance(source, (str, os.PathLike)):
        lines = _read_file(name, source)
    elif isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        bad = [i for i, s in enumerate(source) if not isinstance(s, str)]
        if bad:
            i = bad[0]
            raise InputError(
                f"{name}: every line must be a string; line {i + 1} is {source[i]!r} "
                f"({type(source[i]).__name__}). Pass a file path or a list of strings.")
        lines = list(source)
    else:
        raise InputError(f"{name} must be a file path or a list of strings; got "
                         f"{type(source).__name__}.")
    if not lines:
        raise InputError(f"{name} is empty: no sentences. Pass one line per test-set sentence.")
    blank = [] if empty_lines else [i + 1 for i, s in enumerate(lines) if not s.strip()]
    if blank:
        shown = ", ".join(map(str, blank[:5])) + (", ..." if len(blank) > 5 else "")
        raise InputError(
            f"{name}: {len(blank)} empty line(s) (line {shown}). Every sentence needs text: "
            "fill or remove these lines in all inputs alike, so the streams stay aligned.")
    return lines


def read_references(refs: Any, n: int) -> list[list[str]]:
    """Reference streams (one or several), each validated and ``n`` lines long.

    A str or ``Path`` is one reference file; a list of strings is one
    reference's lines; a list whose items are ``Path`` objects or lists of
    strings holds several references.
    """
    if isinstance(refs, (str, os.PathLike)):
        streams = [read_lines("refs", refs)]
    elif isinstance(refs, Sequence) and refs and all(isinstance(r, str) for r in refs):
        streams = [read_lines("refs", refs)]
    elif isinstance(refs, Sequence) and refs and not isinstance(refs, (bytes, bytearray)):
        streams = [read_lines(f"refs[{k}]", r) for k, r in enumerate(refs)]
    else:
        raise InputError(
            "refs must be a reference file, a list of reference lines, or a list of references "
            f"(Path objects or lists of lines); got {refs!r:.80}.")
    lengths = [len(s) for s in streams]
    if any(m != n for m in lengths):
        raise InputError(
            f"refs: each reference needs one line per hypothesis ({n}); got reference lengths "
            f"{lengths}. Multiple references must be parallel (same number of lines), and a "
            "sentence without a reference must be removed from every input.")
    return streams


def check_tokenize(tokenize: Any) -> str:
    """``tokenize`` if sacrebleu knows it (the allowed names come from the installed sacrebleu)."""
    bleu_module = sacrebleu().metrics.bleu
    names = tuple(getattr(bleu_module, "_TOKENIZERS", {}) or ("13a",))
    return str(check_choice("tokenize", tokenize, names))


def segment_statistics(hyps: list[str], refs: list[list[str]], *, tokenize: str = "13a",
                       lowercase: bool = False) -> np.ndarray:
    """sacrebleu's sufficient statistics per sentence, shape ``(n, 2 + 2 * 4)``.

    Columns: hypothesis length, closest reference length, correct n-grams
    (n = 1..4), total n-grams (n = 1..4) -- exactly what ``corpus_bleu``
    sums before scoring.
    """
    metric = sacrebleu().metrics.BLEU(tokenize=tokenize, lowercase=lowercase)
    stats = metric._extract_corpus_statistics(hyps, refs)  # sacrebleu 2.x sufficient statistics
    return np.asarray(stats, dtype=np.int64)
