"""``nlpower plan --outcome likert|preference``: the same plan as :func:`nlpower.plan`."""

from __future__ import annotations

import json

import pytest

import nlpower
from nlpower import presets
from nlpower.cli import main
from nlpower.outcomes import HeadToHeadParams

SEARCH = ["--max-workers", "4", "--max-items", "16", "--n-sims", "8", "--seed", "3"]
LIB = dict(max_workers=4, max_items=16, n_sims=8, rng=3)


def _plans(path):
    return json.loads(path.read_text())["plans"]


def test_plan_likert_is_the_library_plan(tmp_path):
    out = tmp_path / "l.json"
    assert main(["plan", "--outcome", "likert", "--levels", "5", "--preset", "high-variance",
                 "--effect", "1.0", "--analysis", "lmm", *SEARCH, "--json", str(out)]) == 0
    lib = nlpower.plan(presets.high_variance(), effect=1.0, outcome="likert", levels=5,
                       analysis="lmm", **LIB)
    assert _plans(out) == json.loads(lib.to_frame().to_json(orient="records"))


def test_plan_likert_reads_effect_in_coding(tmp_path):
    # --coding half: --effect is the half-coded latent effect, as for power and mde
    out = tmp_path / "h.json"
    assert main(["plan", "--outcome", "likert", "--levels", "5", "--preset", "high-variance",
                 "--effect", "2.0", "--coding", "half", "--analysis", "lmm", *SEARCH,
                 "--json", str(out)]) == 0
    lib = nlpower.plan(presets.high_variance().to_coding("half"), effect=2.0, outcome="likert",
                       levels=5, analysis="lmm", **LIB)
    assert _plans(out) == json.loads(lib.to_frame().to_json(orient="records"))


def test_plan_preference_is_the_library_plan(tmp_path):
    out = tmp_path / "p.json"
    assert main(["plan", "--outcome", "preference", "--p-win", "0.8", "--sd-worker", "0.3",
                 *SEARCH, "--json", str(out)]) == 0
    p = HeadToHeadParams.from_share(0.8, sd_worker=0.3)
    lib = nlpower.plan(p, effect=p.effect, outcome="preference", **LIB)
    rec = json.loads(out.read_text())
    assert rec["effect"] == pytest.approx(p.effect, rel=1e-12)
    assert rec["plans"] == json.loads(lib.to_frame().to_json(orient="records"))


@pytest.mark.parametrize("argv,match", [
    (["--outcome", "likert", "--levels", "5", "--effect", "0.5"], "needs --preset"),
    (["--outcome", "likert", "--levels", "5", "--effect", "0.5", "--ratings", "x.csv"],
     "--family ordinal"),
    (["--preset", "high-variance", "--effect", "0.1", "--levels", "5"], "--levels is for"),
    (["--outcome", "preference", "--p-win", "0.7", "--preset", "low-variance"], "drop --preset"),
])
def test_plan_outcome_refusals(argv, match, capsys):
    assert main(["plan", *argv]) != 0
    assert match in capsys.readouterr().err


@pytest.mark.parametrize("argv,match", [
    (["--outcome", "preference", "--effect", "0.5"], "--p-win"),
    (["--preset", "high-variance"], "--effect is required"),
    (["--outcome", "likert", "--levels", "5", "--preset", "high-variance"], "--effect is required"),
])
def test_plan_usage_errors(argv, match, capsys):
    with pytest.raises(SystemExit):
        main(["plan", *argv])
    assert match in capsys.readouterr().err
