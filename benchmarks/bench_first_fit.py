"""Cold start: the first fit of a fresh process, nlpower against R in the same run.

Two measurements, each in a new process (nothing cached in memory but the
operating system's file cache), alternating between the contenders and taking
the median of ``--repeats``:

1. ``nlpower fit fixtures/pilot_ratings.csv`` (the CLI: read, design report,
   ML fit of ``rating ~ system + (system || worker) + (system || item)``,
   Tables 13-15), wall time of the whole command, against ``Rscript`` that
   loads lme4, reads the same CSV, rescales, sets the same sum contrasts and
   fits the same model with ``lmer(REML = FALSE)`` and prints its summary.
   Target: nlpower <= 1/4 of R.
2. ``import nlpower`` + the first ``lmer(sleepstudy)`` + ``summary()``, timed
   inside the process (from before the import to after the summary; the
   interpreter's own start-up is reported apart). Target: <= 0.5 s.

Run from the repository root::

    .venv/bin/python benchmarks/bench_first_fit.py --repeats 5

Python runs with its bytecode cache on (in a directory under the system's
temporary directory, not in the tree) and one untimed warm-up run of each
command comes first, as for an installed package, whose modules ``pip``
compiles on install: ``PYTHONDONTWRITEBYTECODE=1`` would otherwise recompile
nlpower's sources in every run (about 0.2 s of CPU).

Each run's CPU time (user + system of the child process) is reported next
to its wall time: on a shared machine the CPU time moves less with the load.
The ratio R / nlpower is printed for both, from the same run.

Also prints, from ``python -X importtime`` of the first measurement (the
CLI fit), the import time by top-level package (the sum of each module's own
time) and the ten slowest top-level imports of the second, to show what
remains, and the CPU time by stage of the CLI fit (numpy, pandas, scipy's
engine modules, nlpower's modules, scipy.optimize, the first and a second
fit in one process) and of the first ``lmer`` (the imports, the fit, the
summary). The machine's load average is printed: a loaded machine inflates
everything (``-X importtime`` itself adds to each import).
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PILOT = ROOT / "fixtures" / "pilot_ratings.csv"
SLEEP = ROOT / "tests" / "reference" / "data" / "sleepstudy.csv"

R_PILOT = f"""
suppressPackageStartupMessages(library(lme4))
d <- read.csv("{PILOT}")
d$rating <- (d$rating - min(d$rating)) / (max(d$rating) - min(d$rating))
d$system <- factor(d$system, levels = c("B", "A"))
contrasts(d$system) <- contr.sum(2)
m <- lmer(rating ~ system + (system || worker) + (system || item), d, REML = FALSE)
print(summary(m))
"""

PY_FIRST = f"""
import time
t0, c0 = time.perf_counter(), time.process_time()
import nlpower
import pandas as pd
d = pd.read_csv({str(SLEEP)!r})
s = nlpower.lmer("Reaction ~ Days + (Days | Subject)", d).summary()
print(time.perf_counter() - t0, time.process_time() - c0)
"""


STAGES = ("import numpy", "import pandas (with pyarrow when installed)",
          "import scipy.linalg, scipy.sparse (the engine's LAPACK and sparse blocks)",
          "import nlpower's CLI, ratings and lmm modules",
          "import scipy.optimize (L-BFGS-B, a stage of the crossed pilot's fit)",
          "first `nlpower fit` in the process (imports the rest, reads, fits, prints)",
          "the same command again in the same process (the work itself)")

PY_STAGES = f"""
import contextlib, io, time
marks = [time.process_time()]
import numpy
marks.append(time.process_time())
import pandas
marks.append(time.process_time())
import scipy.linalg, scipy.sparse
marks.append(time.process_time())
import nlpower.cli, nlpower.cli.fit, nlpower.ratings, nlpower.lmm
marks.append(time.process_time())
import scipy.optimize
marks.append(time.process_time())
for _ in range(2):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        nlpower.cli.main(["fit", {str(PILOT)!r}])
    marks.append(time.process_time())
print(*[b - a for a, b in zip(marks, marks[1:])])
"""


LMER_STAGES = ("import numpy", "import pandas (with pyarrow when installed)",
               "pd.read_csv(sleepstudy)", "import scipy.linalg, scipy.sparse",
               "import nlpower, nlpower.lmm", "first lmer(sleepstudy)", "its summary()")

PY_LMER_STAGES = f"""
import time
marks = [time.process_time()]
import numpy
marks.append(time.process_time())
import pandas as pd
marks.append(time.process_time())
d = pd.read_csv({str(SLEEP)!r})
marks.append(time.process_time())
import scipy.linalg, scipy.sparse
marks.append(time.process_time())
import nlpower, nlpower.lmm
marks.append(time.process_time())
fit = nlpower.lmer("Reaction ~ Days + (Days | Subject)", d)
marks.append(time.process_time())
s = fit.summary()
marks.append(time.process_time())
print(*[b - a for a, b in zip(marks, marks[1:])])
"""


def _stages(code: str = PY_STAGES) -> list[float]:
    """CPU seconds of each stage ``code`` marks, in one fresh process."""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=_env(), cwd=ROOT).stdout
    return [float(v) for v in out.strip().splitlines()[-1].split()]


def _env() -> dict[str, str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # installed packages have compiled bytecode
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "nlpower-bench-pycache")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=_env(), cwd=ROOT)
    return time.perf_counter() - t0, _children_cpu() - cpu0


def _inside(code: str) -> tuple[float, float, float]:
    """In-process wall and CPU seconds (as ``code`` prints them) and the whole process's wall."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=_env(), cwd=ROOT).stdout
    wall = time.perf_counter() - t0
    inner_wall, inner_cpu = map(float, out.strip().splitlines()[-1].split())
    return inner_wall, inner_cpu, wall


def _importtime(args: list[str]) -> list[tuple[int, int, str]]:
    """``(own us, cumulative us, indented name)`` of every import of ``python -X importtime``."""
    err = subprocess.run([sys.executable, "-X", "importtime", *args], check=True,
                         capture_output=True, text=True, env=_env(), cwd=ROOT).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[0].split(":")[1]), int(parts[1]), parts[2].rstrip()))
    return rows


def _slowest_imports(code: str, n: int = 10) -> list[tuple[int, str]]:
    rows = []
    for _, cumulative, name in _importtime(["-c", code]):
        depth = (len(name) - len(name.lstrip())) // 2
        if depth <= 1:
            rows.append((cumulative, name.strip()))
    return sorted(rows, reverse=True)[:n]


def _by_package(args: list[str], n: int = 8) -> list[tuple[str, int]]:
    """Import time summed by top-level package (each module's own time)."""
    total: collections.Counter[str] = collections.Counter()
    for own, _, name in _importtime(args):
        total[name.strip().split(".")[0]] += own
    return total.most_common(n)


def _times(label: str, walls: list[float], cpus: list[float]) -> str:
    med = statistics.median
    return (f"{label}median {med(walls):.2f} s wall, {med(cpus):.2f} s CPU "
            f"(walls {', '.join(f'{t:.2f}' for t in walls)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    rscript = shutil.which("Rscript")
    cli = [sys.executable, "-m", "nlpower", "fit", str(PILOT)]
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    inside, inside_cpu, walls = [], [], []
    _wall(cli)  # warm-up: bytecode cache and the operating system's file cache
    if rscript:
        _wall([rscript, "-e", R_PILOT])
    _inside(PY_FIRST)
    for _ in range(args.repeats):  # alternate, so a change in the load hits both sides
        ours.append(_wall(cli))
        if rscript:
            theirs.append(_wall([rscript, "-e", R_PILOT]))
        t_in, c_in, t_wall = _inside(PY_FIRST)
        inside.append(t_in)
        inside_cpu.append(c_in)
        walls.append(t_wall)
    med = statistics.median
    print(_times("nlpower fit pilot_ratings.csv: ", *map(list, zip(*ours, strict=True))))
    if theirs:
        print(_times("Rscript lme4, same model:      ", *map(list, zip(*theirs, strict=True))))
        wall_ratio = med(t for t, _ in theirs) / med(t for t, _ in ours)
        cpu_ratio = med(c for _, c in theirs) / med(c for _, c in ours)
        print(f"ratio R / nlpower: {wall_ratio:.2f} wall, {cpu_ratio:.2f} CPU (target >= 4)")
    else:
        print("Rscript not found: R side skipped")
    print(f"import nlpower + first lmer(sleepstudy) + summary: median {med(inside):.3f} s "
          f"in-process wall, {med(inside_cpu):.3f} s CPU (target <= 0.5 s); "
          f"whole process {med(walls):.3f} s")
    print("import time of the CLI fit by top-level package (own time of its modules, ms):")
    for package, us in _by_package(["-m", "nlpower", "fit", str(PILOT)]):
        print(f"  {us / 1000:8.1f}  {package}")
    print("slowest top-level imports of the lmer(sleepstudy) run (cumulative ms):")
    for us, name in _slowest_imports(PY_FIRST):
        print(f"  {us / 1000:8.1f}  {name}")
    print(f"CPU seconds of the CLI fit by stage (median of {args.repeats} fresh processes):")
    stages = [_stages() for _ in range(args.repeats)]
    for k, label in enumerate(STAGES):
        print(f"  {med(run[k] for run in stages):6.3f}  {label}")
    print(f"CPU seconds of import + first lmer(sleepstudy) + summary by stage "
          f"(median of {args.repeats}):")
    stages = [_stages(PY_LMER_STAGES) for _ in range(args.repeats)]
    for k, label in enumerate(LMER_STAGES):
        print(f"  {med(run[k] for run in stages):6.3f}  {label}")


if __name__ == "__main__":
    main()
