"""List the functions over 100 lines and the source files over 600 lines under src/nlpower.

Usage: ``python scripts/code_limits.py [--max-function N] [--max-file N]``.  A function's
length runs from its ``def`` (decorators excluded) to its last line, docstring included;
nested functions are counted on their own as well.  Exit status 0 always: the list is a
report (``tests/test_code_limits.py`` holds the limits).  The second column is the
function's length without its docstring.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "nlpower"
MAX_FUNCTION, MAX_FILE = 100, 600


def long_functions(root: Path = SRC, limit: int = MAX_FUNCTION
                   ) -> list[tuple[str, str, int, int]]:
    """``(file, qualified name, lines, lines without the docstring)`` of every function
    longer than ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent.parent))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, qual in _functions(tree, ""):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > limit:
                out.append((rel, qual, n, n - _docstring_lines(node)))
    return out


def _docstring_lines(node: ast.AST) -> int:
    body = getattr(node, "body", [])
    first = body[0] if body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(node: ast.AST, prefix: str) -> list[tuple[Function, str]]:
    found: list[tuple[Function, str]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qual = f"{prefix}{child.name}"
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((child, qual))
            found.extend(_functions(child, qual + "."))
        else:
            found.extend(_functions(child, prefix))
    return found


def long_files(root: Path = SRC, limit: int = MAX_FILE) -> list[tuple[str, int]]:
    """``(file, lines)`` of every source file longer than ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > limit:
            out.append((str(path.relative_to(root.parent.parent)), n))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-function", type=int, default=MAX_FUNCTION)
    ap.add_argument("--max-file", type=int, default=MAX_FILE)
    args = ap.parse_args()
    funcs = long_functions(limit=args.max_function)
    files = long_files(limit=args.max_file)
    print(f"functions over {args.max_function} lines: {len(funcs)}")
    for rel, qual, n, code in funcs:
        print(f"  {n:4d} {code:4d}  {rel}::{qual}")
    print(f"files over {args.max_file} lines: {len(files)}")
    for rel, n in files:
        print(f"  {n:4d}  {rel}")


if __name__ == "__main__":
    main()
