"""Write pilot files in the shapes of real human-evaluation studies, each with its own
column names, plus the messy variants real files come in.

The files re-check the command line as a new user meets it: the shapes of
``pilot_shapes.py`` (whose outputs are reused, not changed) under the column
names, labels and value formats of real exports, and the planning cases a
two-system crossed model does not cover.

Shapes (file name: columns; layout):

``da20.csv``      annotator_id, segment_id, sys_name, score -- 20 systems, 181
                  annotators, 1,000 segments, 22,616 ratings on 0-100 (direct
                  assessment; system names like ``Online-B``).
``expert3.csv``   reviewer, question, model, score -- 3 systems, 4 reviewers,
                  100 questions, every (question, system) cell by 3 reviewers.
``nested4.csv``   annotator, output_id, system_name, likert -- 4 systems, 200
                  outputs nested in systems, 3 ratings per output (600), 1-5.
``noslope.csv``   judge, doc, condition, fluency -- 2 systems, each judge rates
                  one system only and each (doc, system) cell once: the paper's
                  worker and item slopes are not identified.
``ordinal6.csv``  WorkerId, article, summarizer, quality -- 2 systems, 93
                  workers, 99 articles, 4,000 ratings on 1-6.
``h2h.csv``       rater, prompt_id, model_a, model_b, winner -- A/B/tie
                  judgements (``model_a`` / ``model_b`` / ``tie``) of two
                  systems shown in either order, 3 annotators, 150 prompts.
``crowd3.csv``    worker_id, hit_item, sys, rating -- 2 systems, 40 workers,
                  120 items, each item rated under both systems by 3 workers.

Messy variants of ``crowd3`` (same columns unless said): ``bom`` (UTF-8
byte-order mark), ``semicolon`` (``;`` separator, decimal comma), ``missing``
(a few empty ratings), ``strings`` (ratings like ``4 - good``), ``duprows``
(exact duplicated rows), ``oneworker`` (a worker with one rating),
``onesystem`` (a single system), ``constant`` (every rating 3), ``unicode``
(labels with spaces, accents and CJK), ``headerspace`` (column names padded
with spaces).

Run ``python benchmarks/pilot_cli_files.py OUTDIR`` (default ``pilot_files/``) to write the
files; ``python benchmarks/pilot_cli_files.py OUTDIR --run [NAME ...]`` also runs the command
line on them (every case of :data:`CASES`, or those named, one at a time) and prints each
exit code, wall time and peak memory: 0 is a result, 2 one clear error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_shapes import _distinct_workers, make_shape, many_systems  # noqa: E402

WMT_NAMES = ["Online-A", "Online-B", "Online-G", "Online-Y", "Online-Z", "UEdin", "NiuTrans",
             "Facebook-FAIR", "MSRA.MADL", "NEU", "KSAI", "eTranslation", "JHU", "PROMT.NMT",
             "TartuNLP-c", "Helsinki-NLP", "dfki-nmt", "lmu-ctx-tf", "zlabs-nlp", "CUNI-T2T"]


def _rename(df: pd.DataFrame, cols: dict[str, str], systems: dict[str, str] | None = None
            ) -> pd.DataFrame:
    out = df[["worker", "item", "system", "rating"]].copy()
    if systems is not None:
        out["system"] = out["system"].map(systems)
    return out.rename(columns=cols)


def da20() -> pd.DataFrame:
    df = many_systems(20)
    labels = sorted(df["system"].unique())
    return _rename(df, {"worker": "annotator_id", "item": "segment_id", "system": "sys_name",
                        "rating": "score"}, dict(zip(labels, WMT_NAMES, strict=True)))


def expert3() -> pd.DataFrame:
    return _rename(make_shape("expert3"), {"worker": "reviewer", "item": "question",
                                           "system": "model", "rating": "score"},
                   {"s0": "gpt-3.5", "s1": "llama-2-70b", "s2": "ours"})


def nested4() -> pd.DataFrame:
    df = make_shape("nested4s")
    df["rating"] = np.round(df["rating"] * 4 + 1).astype(int)
    return _rename(df, {"worker": "annotator", "item": "output_id", "system": "system_name",
                        "rating": "likert"}, {f"s{j}": f"sys-{c}" for j, c in enumerate("ABCD")})


def noslope(seed: int = 7) -> pd.DataFrame:
    """Two systems; judge j rates only system j % 2; each (doc, system) cell once."""
    rng = np.random.default_rng(seed)
    n_docs, n_judges = 300, 60
    doc = np.repeat(np.arange(n_docs), 2)
    sys_ = np.tile([0, 1], n_docs)
    judge = 2 * rng.integers(0, n_judges // 2, doc.size) + sys_
    u_doc = rng.normal(0, 0.5, n_docs)
    u_judge = rng.normal(0, 0.4, n_judges)
    y = 3.2 + 0.15 * (2 * sys_ - 1) + u_doc[doc] + u_judge[judge] + rng.normal(0, 0.8, doc.size)
    return pd.DataFrame({"judge": [f"J{j:02d}" for j in judge], "doc": [f"doc{d:03d}" for d in doc],
                         "condition": np.where(sys_ == 1, "finetuned", "base"),
                         "fluency": np.clip(np.round(y), 1, 5).astype(int)})


def ordinal6() -> pd.DataFrame:
    df = make_shape("crowd2")
    df["rating"] = df["rating"].astype(int)
    df["worker"] = ["A" + w.upper() + "X9Q" for w in df["worker"]]   # MTurk-like ids
    return _rename(df, {"worker": "WorkerId", "item": "article", "system": "summarizer",
                        "rating": "quality"}, {"s0": "pegasus", "s1": "bart-large"})


def h2h(seed: int = 11) -> pd.DataFrame:
    """3 raters x 150 prompts, one judgement each; B wins 58 % of decisive ones, 15 % ties."""
    rng = np.random.default_rng(seed)
    raters, n_prompts = ["alice", "bob", "chen"], 150
    p_item = rng.normal(0, 0.6, n_prompts)
    p_rater = np.array([-0.2, 0.1, 0.3])
    rows = []
    for i in range(n_prompts):
        for r, name in enumerate(raters):
            eta = 0.32 + p_item[i] + p_rater[r]
            p_b = 0.85 / (1 + np.exp(-eta))
            u = rng.random()
            pref = "tie" if u > 0.85 else ("mistral-7b" if u < p_b else "llama-13b")
            first, second = ("llama-13b", "mistral-7b") if rng.random() < 0.5 else \
                ("mistral-7b", "llama-13b")
            winner = "tie" if pref == "tie" else ("model_a" if pref == first else "model_b")
            rows.append((name, f"p{i:03d}", first, second, winner))
    return pd.DataFrame(rows, columns=["rater", "prompt_id", "model_a", "model_b", "winner"])


def crowd3(seed: int = 5) -> pd.DataFrame:
    """40 workers, 120 items; each item rated under both systems by the same 3 workers."""
    rng = np.random.default_rng(seed)
    n_items, n_workers, k = 120, 40, 3
    w = _distinct_workers(rng, n_items, np.full(n_items, k), n_workers)
    item = np.repeat(np.arange(n_items), k)
    w, item = np.repeat(w, 2), np.repeat(item, 2)
    s = np.tile([0, 1], w.size // 2)
    x = 2 * s - 1
    eta = (3.0 + 0.1 * x + rng.normal(0, 0.4, n_workers)[w] + rng.normal(0, 0.2, n_workers)[w] * x
           + rng.normal(0, 0.6, n_items)[item] + rng.normal(0, 0.3, n_items)[item] * x
           + rng.normal(0, 0.9, w.size))
    return pd.DataFrame({"worker_id": [f"W{v:03d}" for v in w],
                         "hit_item": [f"item_{v}" for v in item],
                         "sys": np.where(s == 1, "new", "old"),
                         "rating": np.clip(np.round(eta), 1, 5).astype(int)})


WORDS = {1: "1 - bad", 2: "2 - poor", 3: "3 - ok", 4: "4 - good", 5: "5 - excellent"}


def messy(base: pd.DataFrame) -> dict[str, tuple[pd.DataFrame, dict[str, str]]]:
    """name -> (frame, to_csv keyword arguments)."""
    out: dict[str, tuple[pd.DataFrame, dict[str, str]]] = {}
    out["bom"] = (base, {"encoding": "utf-8-sig"})
    half = base.copy()
    half["rating"] = half["rating"] + np.where(np.arange(len(half)) % 7 == 0, 0.5, 0.0)
    half.loc[half["rating"] > 5, "rating"] = 5.0
    out["semicolon"] = (half, {"sep": ";", "decimal": ","})
    miss = base.copy().astype({"rating": object})
    miss.loc[[3, 50, 51, 400], "rating"] = ""
    out["missing"] = (miss, {})
    out["strings"] = (base.assign(rating=base["rating"].map(WORDS)), {})
    out["duprows"] = (pd.concat([base, base.iloc[[10, 11, 200]]], ignore_index=True), {})
    extra = pd.DataFrame({"worker_id": ["W999"], "hit_item": ["item_0"], "sys": ["new"],
                          "rating": [4]})
    out["oneworker"] = (pd.concat([base, extra], ignore_index=True), {})
    out["onesystem"] = (base[base["sys"] == "new"], {})
    out["constant"] = (base.assign(rating=3), {})
    uni = base.copy()
    uni["sys"] = uni["sys"].map({"new": "Modèle nouveau ✓", "old": "旧 システム"})
    uni["worker_id"] = "annotator " + uni["worker_id"].str[1:]
    out["unicode"] = (uni, {})
    out["headerspace"] = (base.rename(columns=lambda c: f" {c} "), {})
    return out


def write_all(outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in [("da20", da20), ("expert3", expert3), ("nested4", nested4),
                       ("noslope", noslope), ("ordinal6", ordinal6), ("h2h", h2h),
                       ("crowd3", crowd3)]:
        path = outdir / f"{name}.csv"
        make().to_csv(path, index=False)
        written.append(path)
    for name, (frame, kw) in messy(crowd3()).items():
        path = outdir / f"crowd3_{name}.csv"
        frame.to_csv(path, index=False, **kw)  # type: ignore[call-overload]
        written.append(path)
    return written


_DA = ["--ratings", "da20.csv", "--worker", "annotator_id", "--item", "segment_id", "--system",
       "sys_name", "--rating", "score", "--scale", "0,100", "--duplicates", "keep"]
_E3 = ["--ratings", "expert3.csv", "--worker", "reviewer", "--item", "question", "--system",
       "model", "--rating", "score", "--scale", "0,100"]
_N4 = ["--ratings", "nested4.csv", "--worker", "annotator", "--item", "output_id", "--system",
       "system_name", "--rating", "likert", "--scale", "1,5"]
_NS = ["--ratings", "noslope.csv", "--worker", "judge", "--item", "doc", "--system",
       "condition", "--rating", "fluency", "--scale", "1,5"]
_O6 = ["--ratings", "ordinal6.csv", "--worker", "WorkerId", "--item", "article", "--system",
       "summarizer", "--rating", "quality", "--scale", "1,6"]
_C3 = ["--worker", "worker_id", "--item", "hit_item", "--system", "sys", "--scale", "1,5"]
_H2H = ["--judgements", "h2h.csv", "--worker", "rater", "--item", "prompt_id", "--first",
        "model_a", "--second", "model_b", "--choice", "winner"]
_SIM = ["--n-sims", "50", "--seed", "1", "--quiet"]
_WI = ["--workers", "10", "--items", "100"]
_AB = ["--contrast", "Online-A,Online-B"]
_NO_SLOPES = ["--model", "rating ~ system + (1|worker) + (1|item)"]

#: name -> nlpower arguments (run in the directory of the files)
CASES: dict[str, list[str]] = {
    "da20 fit": ["fit", *_DA[1:]],
    "da20 power": ["power", *_DA, *_AB, *_WI, "--effect", "0.02", *_SIM],
    "da20 mde": ["mde", *_DA, *_AB, *_WI],
    "da20 grid": ["grid", *_DA, *_AB, "--workers", "5,10", "--items", "100,200", "--effects",
                  "0.02", "--n-sims", "30", "--seed", "1", "--quiet"],
    "da20 plan": ["plan", *_DA, *_AB, "--effect", "0.02", "--n-boot", "50", "--seed", "1"],
    "da20 power, no contrast": ["power", *_DA, *_WI, "--effect", "0.02", *_SIM],
    "expert3 power": ["power", *_E3, "--contrast", "ours,gpt-3.5", *_WI, "--effect", "0.02",
                      *_SIM],
    "expert3 mde": ["mde", *_E3, "--contrast", "ours,gpt-3.5", *_WI],
    "expert3 grid": ["grid", *_E3, "--contrast", "ours,gpt-3.5", "--workers", "3,4", "--items",
                     "50,100", "--effects", "0.02,0.04", "--n-sims", "50", "--seed", "1",
                     "--quiet"],
    "expert3 plan": ["plan", *_E3, "--contrast", "ours,gpt-3.5", "--effect", "0.03", "--n-boot",
                     "50", "--seed", "1"],
    "nested4 plan": ["plan", *_N4, "--contrast", "sys-B,sys-A", "--effect", "0.05", "--n-boot",
                     "50", "--seed", "1"],
    "nested4 plan --sd": ["plan", *_N4, "--contrast", "sys-B,sys-A", "--effect", "0.05",
                          "--n-boot", "50", "--seed", "1", "--sd", "item_slope=0.05"],
    "nested4 plan ordinal": ["plan", *_N4, "--contrast", "sys-B,sys-A", "--family", "ordinal",
                             "--effect", "0.4", "--n-boot", "20", "--seed", "1"],
    "noslope plan": ["plan", *_NS, "--effect", "0.05", "--n-boot", "50", "--seed", "1"],
    "noslope plan, no slopes": ["plan", *_NS, *_NO_SLOPES, "--effect", "0.05", "--n-boot", "50",
                                "--seed", "1"],
    "ordinal6 plan lmm": ["plan", *_O6, "--effect", "0.05", "--n-boot", "50", "--seed", "1"],
    "ordinal6 plan ordinal": ["plan", *_O6, "--family", "ordinal", "--effect", "0.3",
                              "--n-boot", "20", "--seed", "1"],
    "h2h plan": ["plan", *_H2H, "--p-win", "0.6", "--n-boot", "20", "--seed", "1"],
    "crowd3 plan": ["plan", "--ratings", "crowd3.csv", *_C3, "--workers-per-item", "3",
                    "--effect", "0.05", "--n-boot", "50", "--seed", "1"],
    **{f"crowd3_{m} fit": ["fit", f"crowd3_{m}.csv", *_C3] for m in
       ("bom", "missing", "strings", "duprows", "oneworker", "onesystem", "constant",
        "unicode", "headerspace")},
    "crowd3_semicolon fit": ["fit", "crowd3_semicolon.csv", *_C3, "--sep", ";"],
}


SRC = Path(__file__).resolve().parents[1] / "src"


def run_case(name: str, where: Path, timeout: float = 1800.0) -> tuple[int | None, float, float]:
    """Exit code (None: killed at ``timeout``), wall seconds and peak resident MiB of one
    case, run by this checkout's package in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "nlpower", *CASES[name]], cwd=where, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            code: int | None = os.waitstatus_to_exitcode(status)
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            code = None
            break
        time.sleep(0.5)
    proc.returncode = -1  # reaped above
    return code, time.perf_counter() - start, usage.ru_maxrss / 1024


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--run"]
    target = Path(args[0] if args else "pilot_files")
    for p in write_all(target):
        print(p, sum(1 for _ in open(p, encoding="utf-8-sig")) - 1, "rows")
    if "--run" in sys.argv:
        for name in args[1:] or list(CASES):
            code, wall, mib = run_case(name, target)
            print(f"{name:32s} exit {code}  {wall:7.1f} s  {mib:6.0f} MiB", flush=True)
