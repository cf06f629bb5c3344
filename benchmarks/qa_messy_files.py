"""Write rating, score and p-value files in the shapes spreadsheet tools and scripts export.

Complements ``pilot_cli_files.py`` (whose files it reuses) with the formats a
new user's files come in: an Excel "CSV UTF-8" export (byte-order mark, CRLF
line ends, trailing empty columns, numbers quoted with decimal commas), a
tab-separated file, a gzipped CSV, a column named like a flag, a sparse pilot
(each worker rates 3-5 items), and score files for ``compare``,
``accuracy estimate`` and ``replicability`` with NaNs, ties, mismatched
lengths and constant scores.

Run ``python benchmarks/qa_messy_files.py OUTDIR`` (default ``qa_files/``).
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_cli_files import crowd3  # noqa: E402


def excel_csv(df: pd.DataFrame, decimal_comma: bool = False) -> bytes:
    """Bytes of ``df`` as Excel writes "CSV UTF-8": BOM, CRLF, two empty trailing columns,
    every field quoted (``4,5`` for 4.5 when ``decimal_comma``)."""
    def cell(v: object) -> str:
        s = str(v)
        if decimal_comma and isinstance(v, float):
            s = s.replace(".", ",")
        return '"' + s + '"'
    lines = [",".join([*(f'"{c}"' for c in df.columns), "", ""])]
    lines += [",".join([*(cell(v) for v in row), "", ""]) for row in df.itertuples(index=False)]
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8")


def sparse(seed: int = 3) -> pd.DataFrame:
    """60 workers each rating 3-5 items (both systems of each), 100 items."""
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(60):
        items = rng.choice(100, size=int(rng.integers(3, 6)), replace=False)
        for i in items:
            for s in ("base", "tuned"):
                y = 3 + 0.2 * (s == "tuned") + rng.normal(0, 0.8)
                rows.append((f"w{w}", f"it{i}", s, int(np.clip(np.round(y), 1, 5))))
    return pd.DataFrame(rows, columns=["annotator", "item", "system", "score"])


def write_all(outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    base = crowd3()
    out: dict[str, bytes] = {}
    out["excel.csv"] = excel_csv(base)
    half = base.assign(rating=base["rating"] + np.where(np.arange(len(base)) % 5 == 0, 0.5, 0.0))
    half.loc[half["rating"] > 5, "rating"] = 5.0
    out["excel_comma.csv"] = excel_csv(half.astype({"rating": float}), decimal_comma=True)
    out["crowd3.tsv"] = base.to_csv(sep="\t", index=False).encode()
    out["crowd3.csv.gz"] = gzip.compress(base.to_csv(index=False).encode())
    out["flagcol.csv"] = base.rename(columns={"sys": "--system", "rating": "-r"}).to_csv(
        index=False).encode()
    out["sparse.csv"] = sparse().to_csv(index=False).encode()
    rng = np.random.default_rng(1)
    a = rng.normal(0.6, 0.1, 40)
    b = a - 0.03 + rng.normal(0, 0.05, 40)
    out["a.txt"] = "\n".join(f"{v:.4f}" for v in a).encode()
    out["b.txt"] = "\n".join(f"{v:.4f}" for v in b).encode()
    out["b_short.txt"] = "\n".join(f"{v:.4f}" for v in b[:35]).encode()
    out["b_nan.txt"] = "\n".join(["nan" if k == 7 else f"{v:.4f}" for k, v in enumerate(b)]).encode()
    out["const.txt"] = "\n".join(["0.5"] * 40).encode()
    out["a_crlf.txt"] = ("\r\n".join(f"{v:.4f}" for v in a) + "\r\n").encode()
    out["ab.csv"] = pd.DataFrame({"sysA": a, "sysB": b}).to_csv(index=False).encode()
    out["ab_nan.csv"] = pd.DataFrame({"sysA": a, "sysB": np.where(np.arange(40) == 3, np.nan, b)}
                                     ).to_csv(index=False).encode()
    gold = rng.integers(0, 2, 200)
    pa = np.where(rng.random(200) < 0.8, gold, 1 - gold)
    pb = np.where(rng.random(200) < 0.85, gold, 1 - gold)
    out["preds.csv"] = pd.DataFrame({"gold": gold, "old": pa, "new": pb}).to_csv(
        index=False).encode()
    out["preds_same.csv"] = pd.DataFrame({"gold": gold, "old": pa, "new": pa}).to_csv(
        index=False).encode()
    out["pvalues.csv"] = b"name,p\nbooks,0.012\ndvd,0.003\nkitchen,0.047\nelectronics,0.26\n"
    out["pvalues_bad.csv"] = b"name,p\nbooks,0.012\ndvd,\nkitchen,1.5\n"
    written = []
    for name, data in out.items():
        (outdir / name).write_bytes(data)
        written.append(outdir / name)
    return written


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "qa_files")):
        print(p, p.stat().st_size, "bytes")
