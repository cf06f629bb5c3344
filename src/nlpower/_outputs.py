"""Writing output files without losing anything: one helper for every writer in the package.

Two rules, used by the command line (:mod:`nlpower.cli.output`), the grid
checkpoints (:mod:`nlpower.grid.checkpoint`, :mod:`nlpower.grid.batchfile`)
and :func:`nlpower.grid.merge`:

* **An output never replaces an input.**  :func:`check_distinct` refuses, before
  any work, an output path that is the same file as one of the run's inputs or
  as another of its outputs -- the same resolved path, or the same file by
  :func:`os.path.samefile` (symbolic and hard links included).
* **A file is replaced whole or not at all.**  :func:`atomic_output` writes to a
  temporary file in the target's own folder, forces it to disk and renames it
  into place (:func:`os.replace`, atomic on one file system).  A failure at
  write time (disk full, no permission, a folder that vanished) leaves the old
  file as it was, removes the temporary file and raises
  :class:`~nlpower.errors.OutputError` saying what failed and what to do.
  A target that exists but is not a regular file (``/dev/full``, a pipe,
  ``/dev/stdout``) is written in place: it cannot be renamed over.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from .errors import OutputError

__all__ = ["atomic_output", "check_distinct", "check_writable", "same_file", "write_bytes",
           "write_text"]

PathLike = str | os.PathLike[str]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (resolved path, or samefile if both exist)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.resolve() == pb.resolve():
            return True
    except (OSError, RuntimeError):  # a symlink loop: fall back to samefile
        pass
    try:
        return os.path.samefile(pa, pb)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def _paths(value: Any) -> list[Path]:
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [] if str(value) == "-" else [Path(value)]
    if isinstance(value, Sequence):
        return [p for v in value for p in _paths(v)]
    return []


def check_distinct(outputs: Mapping[str, Any], inputs: Mapping[str, Any] | None = None) -> None:
    """Refuse an output that is an input or another output (:class:`~nlpower.errors.InputError`).

    ``outputs`` and ``inputs`` map a name as the user typed it (``"--json"``,
    ``"out="``) to a path, a list of paths or ``None``; ``"-"`` (standard
    output) is never a file.

    Examples
    --------
    >>> check_distinct({"--out": "grid.csv", "--json": "grid.json"}, {"--ratings": "pilot.csv"})
    >>> check_distinct({"--out": "pilot.csv"}, {"--ratings": "data/../pilot.csv"})
    Traceback (most recent call last):
    ...
    nlpower.errors.InputError: --out 'pilot.csv' is the same file as the input --ratings \
'data/../pilot.csv'; writing it would destroy the input. Give --out another file name.
    """
    from .errors import InputError

    named_in = [(n, p) for n, v in (inputs or {}).items() for p in _paths(v)]
    named_out = [(n, p) for n, v in outputs.items() for p in _paths(v)]
    for i, (name, path) in enumerate(named_out):
        for in_name, in_path in named_in:
            if same_file(path, in_path):
                raise InputError(
                    f"{name} {str(path)!r} is the same file as the input {in_name} "
                    f"{str(in_path)!r}; writing it would destroy the input. Give {name} another "
                    "file name.")
        for other_name, other in named_out[:i]:
            if same_file(path, other):
                raise InputError(
                    f"{name} {str(path)!r} is the same file as {other_name} {str(other)!r}; one "
                    f"output would overwrite the other. Give {name} and {other_name} different "
                    "file names.")


def _describe(exc: OSError) -> str:
    import errno

    reason = exc.strerror or str(exc)
    hint = {errno.ENOSPC: "free some space or write to another disk",
            errno.EDQUOT: "free some space or write to another disk",
            errno.EACCES: "check the folder's permissions or write somewhere else",
            errno.EPERM: "check the folder's permissions or write somewhere else",
            errno.EROFS: "write to a writable folder",
            errno.ENOENT: "create the folder first or write somewhere else",
            errno.ENOTDIR: "give a path inside an existing folder"}.get(exc.errno or 0,
                                                                      "check the path")
    return f"{reason}; {hint}"


def _special(path: Path) -> bool:
    """An existing target that is not a regular file (a device, a pipe): written in place."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def atomic_output(path: PathLike, *, what: str = "output", binary: bool = False,
                  encoding: str = "utf-8") -> Iterator[IO[Any]]:
    """An open file whose contents replace ``path`` only when the block succeeds.

    The file is a temporary file in ``path``'s folder, flushed, ``fsync``-ed
    and renamed over ``path`` at the end of the block.  If the block or the
    write raises, the temporary file is removed and ``path`` keeps its old
    contents; an :class:`OSError` becomes :class:`~nlpower.errors.OutputError`
    naming ``what`` and ``path``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_output(target, what="out=") as fh:
    ...     _ = fh.write("done\\n")
    >>> target.read_text()
    'done\\n'
    """
    target = Path(path)
    mode = "wb" if binary else "w"
    kw: dict[str, Any] = {} if binary else {"encoding": encoding, "newline": ""}
    if _special(target):
        try:
            with target.open(mode, **kw) as fh:
                yield fh
        except OSError as exc:
            raise OutputError(f"cannot write {what} {str(target)!r}: {_describe(exc)}.") from None
        return
    tmp: Path | None = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                    dir=target.parent if str(target.parent) else ".")
        tmp = Path(name)
        with os.fdopen(fd, mode, **kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():  # keep the old file's permissions, not mkstemp's 0600
            with contextlib.suppress(OSError):
                os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        else:
            with contextlib.suppress(OSError):
                os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OutputError(f"cannot write {what} {str(target)!r}: {_describe(exc)}. "
                          "Nothing was changed.") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()


def check_writable(path: PathLike, *, what: str = "output") -> None:
    """Refuse, before any work, an output whose folder does not take a new file.

    A temporary file is created in ``path``'s folder and removed again, so a
    missing permission or a read-only file system is found before a long run,
    not after it.  (A disk that fills up meanwhile is still only found when
    writing: :func:`atomic_output` keeps the old file then.)
    """
    from .errors import InputError

    target = Path(path)
    if _special(target):
        return
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe",
                                    dir=target.parent if str(target.parent) else ".")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise InputError(f"cannot write {what} {str(target)!r}: {_describe(exc)}. Nothing was "
                         "computed.") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: PathLike, text: str, *, what: str = "output") -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_output`)."""
    with atomic_output(path, what=what) as fh:
        fh.write(text)


def write_bytes(path: PathLike, data: bytes, *, what: str = "output") -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_output`)."""
    with atomic_output(path, what=what, binary=True) as fh:
        fh.write(data)
