"""How the default ordinal ratings fit scales on a crowd-like file (issue 20, item 4).

Fits ``fit_ratings(read_ratings(subset, scale=(1, 5)), family="ordinal")`` --
the paper's ``(system || worker) + (system || item)`` terms, four systems --
on the first ``--items`` items of the 20,000-rating crowd file of
``benchmarks/outside_in.py`` and prints the CPU seconds.  It shows that the
cost grows faster than the number of ratings (see ``docs/ordinal.md``).

Run:  PYTHONPATH=src python benchmarks/ordinal_crowd_scaling.py --items 100 200
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import nlpower

sys.path.insert(0, str(Path(__file__).parent))
from outside_in import crowd_file  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, nargs="+", default=[100, 200])
    args = ap.parse_args()
    df = crowd_file()
    for n in args.items:
        sub = df[df["item"].isin(df["item"].unique()[:n])]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            fit = nlpower.fit_ratings(nlpower.read_ratings(sub, scale=(1, 5)), family="ordinal")
            cpu = time.process_time() - t0
        print(f"{n:5d} items, {len(sub):6d} ratings: {cpu:7.1f} s CPU, "
              f"log-likelihood {fit.fit.loglik:.3f}")


if __name__ == "__main__":
    main()
