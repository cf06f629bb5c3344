"""Executable tutorials: run every ```python block of docs/tutorials/*.md in order.

Each page runs top to bottom in one namespace (like a notebook), in a
temporary working directory that holds a link to the repository's
``fixtures/`` (so pages read ``fixtures/pilot_ratings.csv`` and write their
figures and CSVs where nothing is left behind).  A ```python block followed directly by a
```output block must print that output: the same words, and numbers equal to
0.1% (so a last printed digit may differ between machines, a real change may
not) -- the printed numbers in the docs cannot drift from what the code does.

    python scripts/tutorials.py            # check every page (exit 1 on a difference)
    python scripts/tutorials.py --update   # rewrite the output blocks from a fresh run

The test suite runs the check (tests/docs/test_tutorials.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "tutorials"
BLOCK = re.compile(r"```(python|output)\n(.*?)```\n", re.S)


@dataclass
class Block:
    code: str
    expected: str | None      # the ```output block after it, if any
    span: tuple[int, int] | None  # where that output block's body sits in the page
    actual: str = ""


def parse(text: str) -> list[Block]:
    blocks: list[Block] = []
    for m in BLOCK.finditer(text):
        kind, body = m.group(1), m.group(2)
        if kind == "python":
            blocks.append(Block(body, None, None))
        elif blocks and blocks[-1].expected is None and text[:m.start()].rstrip().endswith("```"):
            blocks[-1].expected, blocks[-1].span = body, (m.start(2), m.end(2))
    return blocks


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
#: Printed numbers may differ in their last digit between machines (an optimum met
#: to 1e-6 can round either way): numbers match within this relative tolerance.
REL_TOL = 1e-3


def same_output(expected: str, actual: str) -> bool:
    """Equal text, with runs of spaces collapsed and numbers equal within ``REL_TOL``."""
    def split(text: str) -> tuple[list[str], list[float]]:
        flat = re.sub(r"[ \t]+", " ", _clean(text))
        return NUMBER.split(flat), [float(x) for x in NUMBER.findall(flat)]

    words_e, nums_e = split(expected)
    words_a, nums_a = split(actual)
    if words_e != words_a or len(nums_e) != len(nums_a):
        return False
    return all(abs(e - a) <= REL_TOL * max(abs(e), abs(a)) for e, a in zip(nums_e, nums_a, strict=True))


def run_page(path: Path) -> list[Block]:
    """Run every python block of ``path``; each block's printed output is in ``.actual``."""
    blocks = parse(path.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "__tutorial__"}
    here = os.getcwd()
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(ROOT / "fixtures", Path(tmp) / "fixtures")  # the example files, read-only use
        os.chdir(tmp)
        try:
            for i, block in enumerate(blocks):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    code = compile(block.code, f"{path.name}[block {i + 1}]", "exec")
                    exec(code, namespace)  # noqa: S102 - the docs are our own code
                block.actual = out.getvalue()
        finally:
            os.chdir(here)
    return blocks


def differences(path: Path) -> list[str]:
    problems = []
    for i, block in enumerate(run_page(path)):
        if block.expected is not None and not same_output(block.expected, block.actual):
            problems.append(f"{path.name}, block {i + 1}: printed\n{block.actual}\n"
                            f"but the page says\n{block.expected}")
    return problems


def update(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    blocks = [b for b in run_page(path) if b.span is not None]
    for block in reversed(blocks):
        assert block.span is not None
        start, end = block.span
        text = text[:start] + _clean(block.actual) + "\n" + text[end:]
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the output blocks")
    parser.add_argument("pages", nargs="*", type=Path, help="pages (default: docs/tutorials/*.md)")
    args = parser.parse_args(argv)
    pages = args.pages or sorted(PAGES.glob("*.md"))
    failed = 0
    for page in pages:
        if args.update:
            update(page)
            print(f"updated {page}")
        else:
            problems = differences(page)
            failed += bool(problems)
            print("\n".join(problems) if problems else f"ok {page.name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
