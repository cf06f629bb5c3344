"""A first fit imports only what it needs: the slow scientific modules stay off its path.

Each check runs a fresh interpreter and reads ``sys.modules`` after the work,
so an import moved back to the top of a module on the path fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from nlpower.ratings.report import _n_components

ROOT = Path(__file__).resolve().parents[1]
SLEEP = ROOT / "tests" / "reference" / "data" / "sleepstudy.csv"
PILOT = ROOT / "fixtures" / "pilot_ratings.csv"

#: Modules a Gaussian first fit and its summary must not import (scipy.stats alone took 2 s).
NOT_ON_LMER_PATH = ("scipy.stats", "scipy.special", "scipy.optimize", "scipy.sparse.csgraph",
                    "matplotlib")
#: The command-line fit polishes with L-BFGS-B (scipy.optimize, which imports scipy.special).
NOT_ON_CLI_PATH = ("scipy.stats", "scipy.sparse.csgraph", "matplotlib")


def _loaded_after(code: str) -> set[str]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_lmer_summary_path() -> None:
    loaded = _loaded_after(
        "import nlpower\nimport pandas as pd\n"
        f"d = pd.read_csv({str(SLEEP)!r})\n"
        "fit = nlpower.lmer('Reaction ~ Days + (Days | Subject)', d)\n"
        "text = fit.summary()\nassert 'Days' in str(text)\n")
    assert "nlpower.lmm" in loaded  # the fit really ran in the child
    assert sorted(m for m in NOT_ON_LMER_PATH if m in loaded) == []


def test_import_alone_loads_no_scipy_or_pandas() -> None:
    loaded = _loaded_after("import nlpower")
    assert sorted(m for m in loaded if m.split(".")[0] in {"scipy", "pandas", "matplotlib"}) == []


def test_cli_fit_path() -> None:
    loaded = _loaded_after(
        f"from nlpower.cli import main\nassert main(['fit', {str(PILOT)!r}]) == 0\n")
    assert "nlpower.ratings.report" in loaded
    assert sorted(m for m in NOT_ON_CLI_PATH if m in loaded) == []


@pytest.mark.parametrize("seed", range(6))
def test_component_count_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_w, n_i = int(rng.integers(2, 40)), int(rng.integers(2, 60))
    n_edges = int(rng.integers(1, 3 * (n_w + n_i)))
    w = rng.integers(0, n_w, n_edges)
    i = rng.integers(0, n_i, n_edges)
    # keep only nodes on an edge, as the design report's factor codes are
    w = np.unique(w, return_inverse=True)[1]
    i = np.unique(i, return_inverse=True)[1]
    n_w, n_i = int(w.max()) + 1, int(i.max()) + 1
    adj = coo_matrix((np.ones(n_edges), (w, n_w + i)), shape=(n_w + n_i,) * 2)
    expected = connected_components(adj, directed=False)[0]
    assert _n_components(w, n_w + i, n_w + n_i) == expected


#: One first fit of each other family, and a ratings file read: scipy.optimize is theirs
#: (L-BFGS-B), scipy.stats is not.
OTHER_FIRST_FITS = {
    "glmer": "d = pd.read_csv({data!r}, dtype={{'herd': str, 'period': str}})\n"
             "text = nlpower.glmer('prop ~ period + (1 | herd)', d, weights='size',"
             " family='binomial').summary()\n",
    "clmm": "d = pd.read_csv({data!r}, dtype={{'judge': str}})\n"
            "text = nlpower.clmm('rating ~ temp + contact + (1 | judge)', d).summary()\n",
    "read_ratings": "text = nlpower.read_ratings({pilot!r}).summary()\n",
}


@pytest.mark.parametrize("verb", sorted(OTHER_FIRST_FITS))
def test_other_first_fits_leave_scipy_stats_out(verb: str) -> None:
    data = {"glmer": "cbpp", "clmm": "wine"}.get(verb, "")
    code = OTHER_FIRST_FITS[verb].format(
        data=str(ROOT / "tests" / "reference" / "data" / f"{data}.csv"), pilot=str(PILOT))
    loaded = _loaded_after("import nlpower\nimport pandas as pd\n" + code
                           + "assert len(str(text)) > 0\n")
    # the work really ran in the child
    assert {"glmer": "nlpower.glmm", "clmm": "nlpower.ordinal",
            "read_ratings": "nlpower.ratings"}[verb] in loaded
    assert sorted(m for m in ("scipy.stats", "matplotlib") if m in loaded) == []
