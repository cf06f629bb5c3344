"""What every subcommand writes, by one rule: outputs checked first, JSON that reproduces the run.

* :func:`check_output_paths` runs before any work (from :func:`nlpower.cli.main`):
  every output flag (``--json``, ``--out``, ``--plot``, ``--power-plot``,
  ``--effects``, ``--checkpoint``) must name a file in an existing directory
  (nothing is created behind the user's back), not a directory; a figure's
  extension must be a format matplotlib writes; only ``--json`` takes ``-``
  (standard output); and no output may be one of the command's input files
  (:data:`INPUT_FLAGS`) or another of its outputs
  (:func:`nlpower._outputs.check_distinct`: same path or same file).
* :func:`write_json` writes strict JSON (NaN as ``null``) to a file or to
  standard output, with a ``run`` record: the package version, the command
  line, the seed and every argument (the design, preset, test ...).
* :func:`save_figure` writes a figure to exactly the path given;
  :func:`write_csv` a frame as CSV.

Every file is written whole or not at all (a temporary file in the target's
folder renamed into place, :func:`nlpower._outputs.atomic_output`): a disk
that fills up or a folder without write permission leaves the old file and
ends in one line saying so.

No statistics live here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from .._outputs import atomic_output, check_distinct, check_writable
from ..errors import InputError

__all__ = ["INPUT_FLAGS", "OUTPUT_FLAGS", "check_output_paths", "fresh_seed", "plot_formats",
           "run_record", "save_figure", "write_csv", "write_json"]

#: Destinations of output flags, checked before any work; the figures among them.
OUTPUT_FLAGS = ("json", "json_out", "out", "plot", "power_plot", "effects", "checkpoint")
FIGURES = ("plot", "power_plot")
#: Destinations of arguments naming files a command reads (never overwritten by an output).
INPUT_FLAGS = ("file", "files", "ratings", "hyps_a", "hyps_b", "refs", "shards", "votes", "judge",
               "judgements")


def plot_formats() -> list[str]:
    """The file extensions matplotlib can write (``png``, ``pdf``, ``svg``, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _flag(dest: str, flags: dict[str, tuple[str, bool]]) -> str:
    if dest in flags:
        return flags[dest][0]
    if dest in INPUT_FLAGS:
        return {"files": "FILE", "shards": "SHARD"}.get(dest, dest.upper())
    return f"--{dest.replace('_', '-')}"


def check_output_paths(args: argparse.Namespace, flags: dict[str, tuple[str, bool]]) -> None:
    """Refuse, before any work, an output path that cannot be written as asked.

    Besides the checks of each path, an output that is one of the command's
    input files, or another of its outputs, is refused (the same path, a
    symbolic or a hard link).  A grid's ``--checkpoint`` is read and extended,
    so it is an output that no other output may name.
    """
    outputs = {_flag(d, flags): getattr(args, d) for d in OUTPUT_FLAGS
               if _is_path(getattr(args, d, None))}
    inputs = {_flag(d, flags): getattr(args, d) for d in INPUT_FLAGS
              if getattr(args, d, None) is not None}
    check_distinct(outputs, inputs)
    for dest in OUTPUT_FLAGS:
        path = getattr(args, dest, None)
        if not _is_path(path):
            continue
        flag = flags.get(dest, (f"--{dest.replace('_', '-')}", False))[0]
        text = str(path)
        if text == "-":
            if dest in ("json", "json_out"):
                continue
            raise InputError(f"{flag} '-': only --json can write to standard output; give a file name.")
        path = Path(text)
        if path.is_dir():
            raise InputError(f"{flag} {text!r} is a directory; give a file name inside it, "
                             f"e.g. {str(path / ('result' + _example_suffix(dest)))!r}.")
        if not path.parent.is_dir():
            raise InputError(f"{flag} {text!r}: the directory {str(path.parent)!r} does not exist. "
                             f"Create it first (mkdir -p {path.parent}), or write somewhere else.")
        check_writable(path, what=flag)
        if dest in FIGURES:
            formats = plot_formats()
            suffix = path.suffix.lower().lstrip(".")
            if not suffix:
                raise InputError(f"{flag} {text!r} has no extension, so the format is unknown; "
                                 f"name the file with one, e.g. {text}.png (allowed: "
                                 f"{', '.join(formats)}).")
            if suffix not in formats:
                raise InputError(f"{flag} {text!r}: matplotlib cannot write .{suffix} files; use "
                                 f"one of {', '.join(formats)} (e.g. {path.stem}.png).")


def _example_suffix(dest: str) -> str:
    return {"json": ".json", "json_out": ".json", "out": ".csv", "effects": ".csv",
            "checkpoint": ".jsonl"}.get(dest, ".png")


def fresh_seed() -> int:
    """A new root seed for a run without ``--seed`` (printed, so the run can be repeated)."""
    return int.from_bytes(os.urandom(4), "little")


def _plain(value: Any) -> Any:
    """JSON-ready: numpy scalars and arrays as Python values, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def run_record(args: argparse.Namespace) -> dict[str, Any]:
    """What reproduces this run: version, command line, seed and every argument."""
    from .. import __version__

    skip = {"func", "flags", "argv", "stdout", "seed_given"}
    arguments = {k: _plain(v) for k, v in sorted(vars(args).items()) if k not in skip}
    argv = getattr(args, "argv", None)
    return {"nlpower": __version__,
            "command": "nlpower " + " ".join(argv) if argv is not None else None,
            "seed": getattr(args, "seed", None),
            "arguments": arguments}


def write_json(args: argparse.Namespace, payload: Any, path: Any = None) -> None:
    """``payload`` (a record or a list of records) with the :func:`run_record`, as strict JSON.

    ``path`` defaults to ``args.json``; ``-`` writes to standard output (the
    human-readable output then goes to standard error).
    """
    path = getattr(args, "json", None) if path is None else path
    if path is None:
        return
    body = dict(payload) if isinstance(payload, dict) else {"results": list(payload)}
    body["run"] = run_record(args)
    text = json.dumps(_plain(body), indent=2, allow_nan=False)
    if str(path) == "-":
        print(text, file=getattr(args, "stdout", None) or sys.stdout)
        return
    with atomic_output(path, what=_what(args, "json", "json_out")) as fh:
        fh.write(text + "\n")
    print(f"wrote {path}")


def _what(args: argparse.Namespace, *dests: str) -> str:
    flags = getattr(args, "flags", None) or {}
    for dest in dests:
        if dest in flags:
            return flags[dest][0]
    return f"--{dests[0].replace('_', '-')}"


def write_csv(args: argparse.Namespace, frame: Any, dest: str = "out") -> None:
    """``frame`` as CSV (no index) to the path of output flag ``dest``, whole or not at all."""
    path = getattr(args, dest)
    with atomic_output(path, what=_what(args, dest)) as fh:
        frame.to_csv(fh, index=False)
    print(f"wrote {path}")


def save_figure(fig: Any, path: Any, *, dpi: int = 150, what: str = "--plot") -> None:
    """Write ``fig`` to exactly ``path`` (its extension, checked first, gives the format)."""
    fmt = Path(path).suffix.lower().lstrip(".") or None
    with atomic_output(path, what=what, binary=True) as fh:
        fig.savefig(fh, format=fmt, dpi=dpi, bbox_inches="tight")
    print(f"wrote {path}")
