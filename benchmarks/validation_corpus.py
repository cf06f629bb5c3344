"""Engine validation corpus: the native engine against lme4 1.1-31, same run.

Usage (from the repository root)::

    PYTHONPATH=src .venv/bin/python benchmarks/validation_corpus.py            # every case
    PYTHONPATH=src .venv/bin/python benchmarks/validation_corpus.py --quick    # no InstEval
    PYTHONPATH=src .venv/bin/python benchmarks/validation_corpus.py --cases ham,tvbo

Every case is fitted by maximum likelihood by both engines: nlpower's native
engine here, lme4 by ``tests/reference/validation_corpus.R`` (``Rscript``,
reading the same CSVs with the same factor level orders and contrasts).  A
case passes when

* the native ML deviance is at most lme4's + ``1e-6`` (``OBJ_TOL``), and
* (when the two deviances agree within ``1e-4``, i.e. both found the same
  optimum) fixed effects and the *identified* variance components agree within
  ``1e-3`` relative (``PAR_TOL``; see :func:`identified_components`).

Cases (the base cases, then variants of the multi-system ones):

* real: lme4's ``sleepstudy`` (correlated and ``||`` slopes), ``Penicillin``,
  ``InstEval`` (``y ~ service + (1|s) + (1|d) + (1|dept)``; skipped by
  ``--quick``); lmerTest's sensory/consumer data ``ham`` (81 consumers x 4
  products x 2 information conditions: the paper's formula with products as
  systems and consumers as workers), ``TVbo`` (8 assessors x 3 TV sets x 4
  pictures x 2 repeats: TV sets as systems, assessors as workers, pictures as
  items), ``carrots`` (103 consumers x 12 products, a sensory covariate slope).
* simulated from Card et al. (2020) Tables 13-15 presets
  (``nlpower.presets.dataset``): 2 systems (hashimoto-lm, paired, fully
  crossed), 4 systems (dathathri-pplm, nested items, 14-of-15 workers per
  item, and hashimoto-reddit, paired, 225 workers, 5 per item: the sparse crowd study of the issue), 5 systems (the
  first five of holtzman, nested, sparse 8 of 60 workers per item) and 7 systems
  (holtzman, paired, k-of-W).
* variants of every multi-system case: ``shuf`` (all factor levels and the
  rows in a random order), ``trt`` (treatment instead of sum coding), ``01``
  (the response rescaled to [0, 1], ``(y - min) / (max - min)``), and all
  three together.  The real cases get each variant; the simulated ones (lme4
  needs minutes per fit there) the base case, ``/01`` and ``/shuf+trt/01``.

Output: the table (markdown) on stdout, ``benchmarks/out/validation_corpus.md``
and ``.json``.  Exit status 1 when a case fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "reference" / "data"
R_SCRIPT = ROOT / "tests" / "reference" / "validation_corpus.R"
OUT = ROOT / "benchmarks" / "out"

OBJ_TOL = 1e-6      # native deviance <= lme4's + OBJ_TOL
SAME_OPT = 1e-4     # deviances this close: the same optimum, compare parameters
PAR_TOL = 1e-3      # relative tolerance on fixed effects and identified variances


@dataclass
class Case:
    name: str
    formula: str
    data: pd.DataFrame
    contrasts: dict[str, str] = field(default_factory=dict)
    group: str = ""     # the base case a variant comes from

    @property
    def factors(self) -> list[str]:
        return [c for c in self.data.columns if isinstance(self.data[c].dtype, pd.CategoricalDtype)]


def _cat(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    df = df.copy()
    for c in cols:
        vals = df[c].astype(str)
        df[c] = pd.Categorical(vals, categories=sorted(vals.unique()))
    return df


# ----------------------------------------------------------------------------- cases

def real_cases(quick: bool) -> list[Case]:
    cases = []
    ss = _cat(pd.read_csv(DATA / "sleepstudy.csv"), ["Subject"])
    cases.append(Case("sleepstudy", "Reaction ~ Days + (Days | Subject)", ss))
    cases.append(Case("sleepstudy_dbar", "Reaction ~ Days + (Days || Subject)", ss))
    pen = _cat(pd.read_csv(DATA / "penicillin.csv"), ["plate", "sample"])
    cases.append(Case("penicillin", "diameter ~ 1 + (1 | plate) + (1 | sample)", pen))
    if not quick:
        ie = pd.read_csv(DATA / "insteval.csv.gz", dtype=str)
        ie["y"] = ie["y"].astype(float)
        ie = _cat(ie, ["s", "d", "dept", "service"])
        cases.append(Case("insteval", "y ~ service + (1 | s) + (1 | d) + (1 | dept)", ie))
    ham = _cat(pd.read_csv(DATA / "ham.csv"), ["Consumer", "Product", "Information"])
    cases.append(Case("ham", "Informed.liking ~ Product + Information + (Product || Consumer)",
                      ham, {"Product": "sum", "Information": "sum"}, group="ham"))
    tv = _cat(pd.read_csv(DATA / "TVbo.csv"), ["Assessor", "TVset", "Picture", "Repeat"])
    cases.append(Case("tvbo", "Coloursaturation ~ TVset + (TVset || Assessor) + (TVset || Picture)",
                      tv, {"TVset": "sum"}, group="tvbo"))
    car = _cat(pd.read_csv(DATA / "carrots.csv"), ["Consumer", "Product"])
    cases.append(Case("carrots", "Preference ~ sens2 + (1 + sens2 | Consumer) + (1 | Product)",
                      car))
    return cases


def _sim(name: str, design: Any, params: Any, seed: int) -> pd.DataFrame:
    from nlpower import simulate

    df = simulate(design, params, rng=seed)[["worker", "item", "system", "rating"]]
    return _cat(df, ["worker", "item", "system"])


def simulated_cases() -> list[Case]:
    from nlpower import CrossedDesign, presets
    from nlpower.params import MultiSystemParams

    out = []
    paper = "rating ~ system + (system || item) + (system || worker)"
    lm = presets.dataset("hashimoto-lm")
    out.append(("sim2_paired_full", _sim("", CrossedDesign(20, 50, 2), lm.params, 1301)))
    pp = presets.dataset("dathathri-pplm")
    out.append(("sim4_nested_kofw",
                _sim("", CrossedDesign(15, 200, 4, workers_per_item=14, items="nested"),
                     pp.params, 1302)))
    rd = presets.dataset("hashimoto-reddit")
    out.append(("sim4_paired_sparse",
                _sim("", CrossedDesign(225, 100, 4, workers_per_item=5), rd.params, 1303)))
    hz = presets.dataset("holtzman").params
    hz5 = MultiSystemParams(beta0=hz.beta0, effects=hz.effects[:4], sd_worker=hz.sd_worker,
                            sd_worker_systems=hz.sd_worker_systems[:5], sd_item=hz.sd_item,
                            sd_item_systems=hz.sd_item_systems[:5], sigma=hz.sigma)
    out.append(("sim5_nested_sparse",
                _sim("", CrossedDesign(40, 150, 5, workers_per_item=8, items="nested"), hz5, 1304)))
    out.append(("sim7_paired_kofw",
                _sim("", CrossedDesign(12, 20, 7, workers_per_item=4), hz, 1305)))
    return [Case(n, paper, d, {"system": "sum"}, group=n) for n, d in out]


def variants(case: Case, seed: int, full: bool) -> list[Case]:
    """Shuffled level orders, treatment coding, rescaled response; ``full``: each alone too.

    Without ``full`` (the simulated cases, where lme4 takes minutes per fit):
    the base case, shuffled + treatment + rescaled together, and rescaled alone.
    """
    rng = np.random.default_rng(seed)
    out = [case]
    shuf = case.data.copy()
    for c in case.factors:
        cats = list(shuf[c].cat.categories)
        shuf[c] = shuf[c].cat.reorder_categories([cats[i] for i in rng.permutation(len(cats))])
    shuf = shuf.iloc[rng.permutation(len(shuf))].reset_index(drop=True)
    out.append(Case(case.name + "/shuf", case.formula, shuf, case.contrasts, case.group))
    out.append(Case(case.name + "/trt", case.formula, case.data,
                    {k: "treatment" for k in case.contrasts}, case.group))
    resp = case.formula.split("~")[0].strip()
    raw = case.data.copy()
    lo, hi = float(raw[resp].min()), float(raw[resp].max())
    if lo >= 0.0 and hi <= 1.0:
        raw[resp] = 1.0 + 4.0 * raw[resp]
        tag = "/raw"
    else:                                   # real data: rescale to [0, 1] instead
        raw[resp] = (raw[resp] - lo) / (hi - lo)
        tag = "/01"
    out.append(Case(case.name + tag, case.formula, raw, case.contrasts, case.group))
    combo = out[1].data.copy()
    combo[resp] = (1.0 + 4.0 * combo[resp]) if tag == "/raw" else (combo[resp] - lo) / (hi - lo)
    out.append(Case(case.name + "/shuf+trt" + tag, case.formula, combo,
                    {k: "treatment" for k in case.contrasts}, case.group))
    if not full:
        out = [out[0], out[4], out[3]]
    return out


def all_cases(quick: bool = False, names: list[str] | None = None) -> list[Case]:
    cases: list[Case] = []
    for c in real_cases(quick):
        cases.extend(variants(c, 17, True) if c.group else [c])
    for c in simulated_cases():
        cases.extend(variants(c, 17, False))
    if names:
        cases = [c for c in cases if c.name.split("/")[0] in names or c.name in names]
    return cases


# ----------------------------------------------------------------------------- engines

def write_manifest(cases: list[Case], folder: Path) -> Path:
    entries = []
    for i, c in enumerate(cases):
        csv = f"case{i:03d}.csv"
        c.data.to_csv(folder / csv, index=False, float_format="%.17g")
        entries.append({"name": c.name, "csv": csv, "formula": c.formula,
                        "contrasts": c.contrasts,
                        "levels": {f: [str(v) for v in c.data[f].cat.categories] for f in c.factors}})
    path = folder / "manifest.json"
    path.write_text(json.dumps({"cases": entries}))
    return path


def run_lme4(cases: list[Case], folder: Path, tight: bool = False) -> dict[str, dict[str, Any]]:
    manifest = write_manifest(cases, folder)
    out = folder / "lme4.json"
    subprocess.run(["Rscript", "--vanilla", str(R_SCRIPT), f"--manifest={manifest}",
                    f"--out={out}", *(["--tight"] if tight else [])], check=True)
    res = json.loads(out.read_text())
    return {c["name"]: c for c in res["cases"]}


def reread(case: Case, folder: Path, i: int) -> pd.DataFrame:
    """The case's data as written to CSV (both engines fit the same numbers)."""
    df = pd.read_csv(folder / f"case{i:03d}.csv", dtype={f: str for f in case.factors})
    for f in case.factors:
        df[f] = pd.Categorical(df[f], categories=[str(v) for v in case.data[f].cat.categories])
    return df


def run_native(case: Case, data: pd.DataFrame) -> dict[str, Any]:
    from nlpower.lmm import lmer
    from nlpower.lmm.names import coef_aliases, lme4_name

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fit = lmer(case.formula, data, REML=False, contrasts=case.contrasts or None)
        dt = time.perf_counter() - t0
    # compared with lme4 by name: lme4's names of sum-coded columns (system1, not system[A])
    al = coef_aliases(fit)
    terms = [{"grp": t.grp, "group": t.group, "cnames": [lme4_name(c, al) for c in t.cnames],
              "cov": t.cov} for t in fit.var_terms]
    fixef = {lme4_name(str(k), al): float(v) for k, v in fit.fixef.items()}
    return {"deviance": float(fit.deviance), "fixef": fixef, "sigma": fit.sigma,
            "terms": terms, "time": dt, "optinfo": fit.optinfo, "fit": fit}


# ----------------------------------------------------------------------------- comparison

def _group_cov(terms: list[dict[str, Any]], group: str, cols: list[tuple[str, ...]]) -> np.ndarray:
    """Block-diagonal covariance of ``group``'s terms, in the order of ``cols``."""
    mats = []
    for cn in cols:
        hit = [t for t in terms if t["group"] == group and tuple(t["cnames"]) == cn]
        if len(hit) != 1:
            raise KeyError(f"term {cn} on {group} not found")
        q = len(cn)
        mats.append(np.asarray(hit[0]["cov"], dtype=float).reshape(q, q))
    n = sum(m.shape[0] for m in mats)
    out = np.zeros((n, n))
    k = 0
    for m in mats:
        q = m.shape[0]
        out[k:k + q, k:k + q] = m
        k += q
    return out


def identified_components(case: Case, data: pd.DataFrame, native: dict[str, Any],
                          lme4: dict[str, Any]) -> list[tuple[str, float, float]]:
    """Identified variance components: ``z_a' C_g z_b`` for Z-row patterns a, b of group g
    that occur together in some level of g (plus sigma^2).

    For ``(system || g)`` = ``(1|g) + (0 + system|g)`` the split between the intercept
    variance and the system covariance is not identified; these are the per-system
    (co)variances ``s0^2 + Sigma[a, b]`` the likelihood sees.
    """
    from nlpower.lmm.frame import model_frame

    spec = model_frame(case.formula, data, contrasts=case.contrasts or None)
    lterms = []
    for t in lme4["terms"]:
        group = t["grp"].split(".")[0] if t["grp"] not in data.columns else t["grp"]
        lterms.append({"group": group, "cnames": t["cnames"] if isinstance(t["cnames"], list)
                       else [t["cnames"]], "cov": t["cov"]})
    out = [("sigma^2", native["sigma"] ** 2, float(lme4["sigma"]) ** 2)]
    groups = list(dict.fromkeys(t.group for t in spec.re_terms))
    for g in groups:
        terms = [t for t in spec.re_terms if t.group == g]
        cols = [tuple(t.cnames) for t in terms]
        Z = np.hstack([np.asarray(t.Z, dtype=float) for t in terms])
        codes = terms[0].codes
        pats, inv = np.unique(np.round(Z, 10), axis=0, return_inverse=True)
        inv = inv.ravel()
        if len(pats) > 40:
            continue
        Cn = _group_cov(native["terms"], g, cols)
        Cl = _group_cov(lterms, g, cols)
        seen = set()
        for lev in np.unique(codes):
            ps = np.unique(inv[codes == lev])
            for a in ps:
                for b in ps:
                    if a <= b:
                        seen.add((int(a), int(b)))
        for a, b in sorted(seen):
            za, zb = pats[a], pats[b]
            out.append((f"{g}[{a},{b}]", float(za @ Cn @ zb), float(za @ Cl @ zb)))
    return out


def compare(case: Case, data: pd.DataFrame, nat: dict[str, Any], l4: dict[str, Any],
            l4_tight: dict[str, Any] | None = None) -> dict[str, Any]:
    """One table row.  Parameters are compared with ``l4_tight`` (lme4 converged with
    ``xtol_abs = 1e-12``) when given, else with the default lme4 fit."""
    d_obj = nat["deviance"] - float(l4["deviance"])
    row: dict[str, Any] = {"case": case.name, "n": len(data), "native": nat["deviance"],
                           "lme4": float(l4["deviance"]), "diff": d_obj,
                           "t_native": nat["time"], "t_lme4": float(l4["time"]),
                           "lme4_msgs": l4.get("messages") or []}
    fe_err = 0.0
    vc_err = 0.0
    if l4_tight is not None:
        row["lme4_tight"] = float(l4_tight["deviance"])
        l4 = l4_tight
        d_obj = nat["deviance"] - float(l4["deviance"])
    if abs(d_obj) <= SAME_OPT:
        scale = max(abs(v) for v in nat["fixef"].values())
        for k, v in nat["fixef"].items():
            lv = float(l4["fixef"][k])
            fe_err = max(fe_err, abs(v - lv) / max(abs(lv), 1e-2 * scale))
        comps = identified_components(case, data, nat, l4)
        s2 = comps[0][2]
        for _, a, b in comps:
            vc_err = max(vc_err, abs(a - b) / max(abs(b), 1e-2 * s2))
    row["fixef_rel"] = fe_err
    row["vc_rel"] = vc_err
    row["objective_ok"] = bool(row["diff"] <= OBJ_TOL)
    row["ok"] = bool(row["objective_ok"] and fe_err <= PAR_TOL and vc_err <= PAR_TOL)
    return row


def star(r: dict[str, Any]) -> str:
    return "*" if "lme4_tight" in r else ""


def _par(r: dict[str, Any], key: str) -> str:
    """The parameter column, or "n/a" where the two engines found different optima."""
    if "lme4_tight" not in r and abs(r["diff"]) > SAME_OPT:
        return "n/a"
    return f"{r[key]:.1e}{star(r)}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | n | native deviance | lme4 deviance | native - lme4 | fixef rel | "
             "VC rel | native s | lme4 s | speed-up | ok |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    # VC/fixef marked * : compared with lme4 converged tightly (xtol_abs 1e-12)
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['n']} | {r['native']:.6f} | {r['lme4']:.6f} | {r['diff']:+.2e} | "
            f"{_par(r, 'fixef_rel')} | {_par(r, 'vc_rel')} | {r['t_native']:.2f} | {r['t_lme4']:.2f} | "
            f"{r['t_lme4'] / max(r['t_native'], 1e-9):.1f}x | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(lines)


def run(cases: list[Case], pinned: Path | None = None) -> list[dict[str, Any]]:
    """Fit every case with both engines (``pinned``: lme4's results from that JSON instead)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if pinned is None:
            l4 = run_lme4(cases, folder)
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / "validation_corpus_lme4.json").write_text(json.dumps(
                {"cases": list(l4.values())}, indent=1))
        else:
            write_manifest(cases, folder)
            l4 = {c["name"]: c for c in json.loads(pinned.read_text())["cases"]}
        rows = []
        nats = []
        for i, c in enumerate(cases):
            data = reread(c, folder, i)
            nat = run_native(c, data)
            nats.append((data, nat))
            rows.append(compare(c, data, nat, l4[c.name]))
            r = rows[-1]
            print(f"{c.name}: native {r['native']:.6f} lme4 {r['lme4']:.6f} diff {r['diff']:+.2e} "
                  f"({r['t_native']:.2f} s / {r['t_lme4']:.2f} s)", file=sys.stderr, flush=True)
        # parameters disagree where lme4's default fit is above the native optimum on a
        # flat ridge: judge them against lme4 converged tightly (same run, R again)
        redo = [i for i, r in enumerate(rows) if r["diff"] <= OBJ_TOL and not r["ok"]]
        if redo and pinned is None:
            sub = folder / "tight"
            sub.mkdir()
            tight = run_lme4([cases[i] for i in redo], sub, tight=True)
            (OUT / "validation_corpus_lme4_tight.json").write_text(json.dumps(
                {"cases": list(tight.values())}, indent=1))
            for i in redo:
                data, nat = nats[i]
                rows[i] = compare(cases[i], data, nat, l4[cases[i].name], tight[cases[i].name])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip InstEval")
    ap.add_argument("--cases", default="", help="comma-separated base case names")
    ap.add_argument("--pinned", type=Path, default=None,
                    help="lme4 results from this JSON (e.g. tests/reference/validation_corpus.json) "
                         "instead of running R")
    ap.add_argument("--glmm", choices=("yes", "no", "only"), default="yes",
                    help="the GLMM cases of tests/reference/glmer_reference.R (nlpower.glmer vs "
                         "lme4::glmer, benchmarks/bench_glmm.py) after the LMM ones, or only them")
    args = ap.parse_args(argv)
    if args.glmm == "only":
        return _glmm_section("")
    names = [s for s in args.cases.split(",") if s] or None
    cases = all_cases(args.quick, names)
    rows = run(cases, args.pinned)
    md = table(rows)
    tight = [r for r in rows if "lme4_tight" in r]
    if tight:
        md += ("\n\n\\* parameters compared with lme4 converged tightly (BOBYQA xtol_abs 1e-12, "
               "ftol_abs 1e-14), because lme4's default fit stopped above the native optimum on a "
               "flat ridge:\n\n" + "\n".join(
                   f"- {r['case']}: tight lme4 deviance {r['lme4_tight']:.6f}, native - tight "
                   f"{r['native'] - r['lme4_tight']:+.2e}" for r in tight))
    print(md)
    n_bad = sum(not r["ok"] for r in rows)
    n_obj = sum(r["diff"] <= OBJ_TOL for r in rows)
    summary = (f"\n{n_obj} of {len(rows)} cases with native deviance <= lme4's + {OBJ_TOL:g}; "
               f"{len(rows) - n_bad} of {len(rows)} also with fixed effects and identified "
               f"variances within {PAR_TOL:g} relative (n/a: different optima, native lower)")
    print(summary)
    md += "\n" + summary
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "validation_corpus.md").write_text(md + "\n")
    (OUT / "validation_corpus.json").write_text(json.dumps(rows, indent=1, default=str))
    if args.glmm == "yes":
        n_bad += _glmm_section(md)
    return 1 if n_bad else 0


def _glmm_section(md: str) -> int:
    """Append the GLMM table (both engines fitted now); 1 when a GLMM case fails."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_glmm import validation_table
    rows, ok = validation_table()
    glmm = ("\n\n## GLMMs: nlpower.glmer vs lme4::glmer (log-likelihoods; Laplace unless "
            "the case says nAGQ)\n\n" + "\n".join(rows) + "\n\n\\* lme4's own fit failed its "
            "gradient check (parameters not compared; native logLik higher)")
    print(glmm)
    (OUT / "validation_corpus.md").write_text(md + glmm + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
