"""Reading a user's text file, refused in words when it is not text.

One helper for the package's small readers (score files, system outputs,
p-value lists, the accuracy table): :func:`read_text` returns the file's
text decoded as UTF-8 (a byte-order mark dropped), or raises
:class:`~nlpower.errors.InputError` saying what the bytes look like --
UTF-16 or latin-1 text (with the ``encoding=`` to pass) or a binary file --
instead of a ``UnicodeDecodeError`` traceback.  :func:`decoding_hint` is
that advice alone (the rating reader uses it too).
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

from .errors import InputError

__all__ = ["BINARY_MAGIC", "decoding_hint", "read_text"]

#: Opening bytes of common binary formats (zip/xlsx, PNG, PDF, old Excel, gzip, GIF, JPEG).
BINARY_MAGIC = (b"PK\x03\x04", b"\x89PNG", b"%PDF", b"\xd0\xcf\x11\xe0", b"\x1f\x8b", b"GIF8",
           b"\xff\xd8\xff")


def _utf16(data: bytes) -> bool:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    half = len(data) // 2
    if len(data) < 4:
        return False
    for name, high in (("utf-16-le", data[1::2]), ("utf-16-be", data[0::2])):
        if high.count(0) > 0.6 * half:     # ASCII-range text in UTF-16: every other byte 0
            text = data[:2 * half].decode(name, errors="replace")
            shown = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
            if shown >= 0.95 * len(text):  # a binary file's zero bytes decode to control codes
                return True
    return False


def decoding_hint(data: bytes, option: str | None = "encoding=") -> str:
    """What ``data`` (a file's first bytes) looks like, as advice on how to read it.

    ``option`` is how the reader takes an encoding (``None``: it takes none,
    so the advice is to save the file as UTF-8).

    Examples
    --------
    >>> decoding_hint("café".encode("latin-1"))
    "its bytes look like latin-1 / Windows-1252 (as Excel's CSV writes): pass encoding='latin-1'"
    >>> decoding_hint(b"\\x89PNG\\r\\n", None)[:29]
    'it looks like a binary file ('
    """
    def advice(name: str) -> str:
        return f"pass {option}{name!r}" if option else "save it as UTF-8 text"

    if _utf16(data):
        return f"its bytes look like UTF-16 (as Excel's 'Unicode text' writes): {advice('utf-16')}"
    if b"\x00" in data or data.startswith(BINARY_MAGIC):
        return ("it looks like a binary file (a spreadsheet, archive or image?), not text: export "
                "or save it as plain text first")
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return f"{advice('latin-1')} if that is its encoding" if option else advice("")
    return f"its bytes look like latin-1 / Windows-1252 (as Excel's CSV writes): {advice('latin-1')}"


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of ``path`` (UTF-8, a byte-order mark dropped); ``what`` names it in errors.

    Raises
    ------
    InputError
        The path is not a readable file, or its bytes are not UTF-8 text
        (the message says what they look like: UTF-16, latin-1, binary).
    """
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{what} {str(file)!r} does not exist or is not a file.")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(file)!r}: {exc.strerror or exc}. Check the "
                         "path and its permissions.") from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if b"\x00" in data[:4096] or data.startswith(BINARY_MAGIC):
        raise InputError(f"{what} {str(file)!r} is not text: {decoding_hint(data[:4096], None)}.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = decoding_hint(data[:4096], None)
        raise InputError(f"{what} {str(file)!r} is not UTF-8 text (byte {data[exc.start:exc.start + 1]!r} "
                         f"at position {exc.start}); {hint}.") from None
