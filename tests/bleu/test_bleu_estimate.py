"""BLEU from sufficient statistics, swap effects, estimation of P0/b0 and the paired test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nlpower import bleu
from nlpower.bleu.score import bleu_from_stats, swap_effects
from nlpower.bleu.text import segment_statistics
from nlpower.errors import InputError

sacrebleu = pytest.importorskip("sacrebleu")

VOCAB = [f"w{i}" for i in range(200)]


def noisy_corpus(n: int, seed: int, same: float = 0.15) -> tuple[list[str], list[str], list[str], list[str]]:
    """Random references (two streams) and two noisy systems; ``same`` share of identical outputs."""
    gen = np.random.default_rng(seed)
    refs = [" ".join(gen.choice(VOCAB, size=gen.integers(2, 20))) for _ in range(n)]
    refs2 = [" ".join(gen.permutation(r.split())) for r in refs]

    def noisy(ref: str, p: float) -> str:
        words = [w if gen.random() > p else str(gen.choice(VOCAB)) for w in ref.split()]
        if gen.random() < 0.3 and len(words) > 2:
            words = words[:-2]
        return " ".join(words)

    a = [noisy(r, 0.3) for r in refs]
    b = [x if gen.random() < same else noisy(r, 0.35) for x, r in zip(a, refs, strict=True)]
    return a, b, refs, refs2


@pytest.mark.parametrize("smooth", ["exp", "floor", "add-k", "none"])
def test_bleu_from_stats_equals_sacrebleu_corpus_bleu(smooth):
    a, _, refs, refs2 = noisy_corpus(120, 1)
    for streams in ([refs], [refs, refs2]):
        st = segment_statistics(a, streams)
        ours = float(bleu_from_stats(st.sum(axis=0), smooth_method=smooth))
        theirs = sacrebleu.corpus_bleu(a, streams, smooth_method=smooth).score
        assert abs(ours - theirs) < 1e-9


def test_bleu_from_stats_edge_cases_match_sacrebleu_compute_bleu():
    # no matches, empty higher orders (sentences shorter than 4 tokens), zero-length output
    from sacrebleu.metrics import BLEU

    gen = np.random.default_rng(3)
    rows = []
    for _ in range(400):
        total = gen.integers(0, 6, size=4)
        total = np.sort(total)[::-1]
        correct = np.minimum(total, gen.integers(0, 4, size=4))
        rows.append([gen.integers(0, 8), gen.integers(1, 8), *correct, *total])
    rows.append([0, 5, 0, 0, 0, 0, 0, 0, 0, 0])
    for smooth in ("exp", "floor", "add-k", "none"):
        ours = bleu_from_stats(np.array(rows), smooth_method=smooth)
        theirs = [BLEU.compute_bleu(list(r[2:6]), list(r[6:10]), int(r[0]), int(r[1]),
                                    smooth_method=smooth).score for r in rows]
        assert np.max(np.abs(ours - np.array(theirs))) < 1e-9


def test_swap_effects_equal_brute_force_recomputation():
    a, b, refs, refs2 = noisy_corpus(30, 2)
    for streams in ([refs], [refs, refs2]):
        bleu_a, bleu_b, effects = swap_effects(segment_statistics(a, streams),
                                               segment_statistics(b, streams))
        d0 = sacrebleu.corpus_bleu(a, streams).score - sacrebleu.corpus_bleu(b, streams).score
        assert abs((bleu_a - bleu_b) - d0) < 1e-9
        brute = []
        for i in range(len(a)):
            a2, b2 = list(a), list(b)
            a2[i], b2[i] = b[i], a[i]
            brute.append(sacrebleu.corpus_bleu(a2, streams).score
                         - sacrebleu.corpus_bleu(b2, streams).score - d0)
        assert np.max(np.abs(effects - np.array(brute))) < 1e-9
        assert np.all(effects[[x == y for x, y in zip(a, b, strict=True)]] == 0)


def test_paired_test_equals_sacrebleu_paired_ar():
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import _paired_ar_test

    a, b, refs, _ = noisy_corpus(300, 4)
    res = bleu.estimate(a, b, refs, n_resamples=2000, rng=12345)
    metric = BLEU()
    base = metric._extract_corpus_statistics(a, [refs])
    _, out = _paired_ar_test({"BLEU": (np.array(base), metric._aggregate_and_compute(base))},
                             "b", b, [refs], {"BLEU": metric}, n_samples=2000, seed=12345)
    assert res.pvalue == out["BLEU"].p_value
    assert res.bleu_a == pytest.approx(sacrebleu.corpus_bleu(a, [refs]).score, abs=1e-9)
    # App. G.1 / Fig. 15: sums of single effects track swapping whole subsets
    assert res.subset_check.correlation > 0.99
    assert abs(res.subset_check.slope - 1) < 0.05
    assert abs(-0.5 * res.effects.sum() - res.delta_bleu) < 0.05 * abs(res.delta_bleu) + 0.05


def controlled_corpus(n: int, p0: float, scale: float, seed: int):
    """Texts whose per-sentence statistics are set by design.

    Each reference has 24 distinct tokens; a system "breaks" k tokens at
    positions 3, 7, 11, 15, 19 (4 apart, so each break removes exactly
    1/2/3/4 matched 1/2/3/4-grams and lengths never change).  Sentence i
    differs between systems by j_i = k_B - k_A breaks: j_i = 0 with
    probability p0, else |j| ~ geometric-like on 1..5 with ``scale``, random sign.
    """
    gen = np.random.default_rng(seed)
    mags = np.arange(1, 6)
    w = np.exp(-mags / scale)
    w /= w.sum()
    slots = [3, 7, 11, 15, 19]
    a, b, refs, js, ks = [], [], [], [], []
    for i in range(n):
        ref = [f"s{i}t{t}" for t in range(24)]
        j = 0 if gen.random() < p0 else int(gen.choice(mags, p=w)) * int(gen.choice([-1, 1]))
        base = int(gen.integers(0, 6 - abs(j)))
        ka, kb = (base, base + j) if j >= 0 else (base - j, base)

        def broken(k: int, ref: list[str] = ref, i: int = i) -> str:
            out = list(ref)
            for s in slots[:k]:
                out[s] = f"x{i}q{s}"
            return " ".join(out)

        a.append(broken(ka))
        b.append(broken(kb))
        refs.append(" ".join(ref))
        js.append(j)
        ks.append((ka, kb))
    return a, b, refs, np.array(js), np.array(ks), float(np.sum(w * mags))


def test_estimate_recovers_p0_and_b0_on_controlled_text():
    n, p0 = 2000, 0.2
    a, b, refs, js, ks, mean_abs_j = controlled_corpus(n, p0, 1.5, seed=8)
    res = bleu.estimate(a, b, refs, n_resamples=200, rng=1)
    # P0: the structural zeros are exactly the sentences with j = 0 ...
    assert res.fit.n_zero == int(np.sum(js == 0))
    # ... a binomial draw around the designed p0
    assert abs(res.p0 - p0) < 4 * math.sqrt(p0 * (1 - p0) / n)
    # b0: each extra break in B moves (1, 2, 3, 4) matched n-grams from one system to the other;
    # to first order delta_i = -j_i c with c = (BLEU_A sum_k k/m_A,k + BLEU_B sum_k k/m_B,k) / 4
    # (d BLEU / d m_k = BLEU / (4 m_k)), so b = c E|j| over the non-zero sentences.
    # matched k-grams by design: 25 - k per sentence, minus k per break
    k = np.arange(1, 5)
    ma = n * (25 - k) - k * ks[:, 0].sum()
    mb = n * (25 - k) - k * ks[:, 1].sum()
    c = (res.bleu_a * np.sum(k / ma) + res.bleu_b * np.sum(k / mb)) / 4
    b0_design = n * c * mean_abs_j
    nz = np.abs(js[js != 0])
    se_rel = nz.std() / nz.mean() / math.sqrt(nz.size)
    assert abs(res.b0 / b0_design - 1) < 4 * se_rel + 0.02
    assert np.corrcoef(res.effects, -js)[0, 1] > 0.999


def test_inputs_from_files_and_several_references(tmp_path: Path):
    a, b, refs, refs2 = noisy_corpus(80, 5)
    paths = {}
    for name, lines in {"a": a, "b": b, "r1": refs, "r2": refs2}.items():
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    from_lists = bleu.estimate(a, b, [refs, refs2], n_resamples=500)
    from_files = bleu.estimate(str(paths["a"]), paths["b"], [paths["r1"], paths["r2"]],
                               n_resamples=500)
    assert from_files.bleu_a == from_lists.bleu_a and from_files.pvalue == from_lists.pvalue
    assert from_files.n_refs == 2
    one = bleu.estimate(a, b, paths["r1"], n_resamples=500)
    assert one.bleu_a == pytest.approx(sacrebleu.corpus_bleu(a, [refs]).score, abs=1e-9)
    assert "Delta-Laplace ML fit" in one.summary() and len(one.to_frame()) == 80
    assert one.to_record()["n_refs"] == 1 and "p0=" in repr(one)


@pytest.mark.parametrize(("args", "match"), [
    ((["a b c", "d e"], ["a b c"], ["a b c", "d e"]),
     r"hyps_a and hyps_b must have one line per test sentence each; got 2 and 1"),
    ((["a b c", "d e"], ["a b c", "d e"], ["a b c", ""]), r"refs: 1 empty line\(s\) \(line 2\)"),
    ((["a b c", "d e"], ["a b c", "d e"], [["a b c", "d e"], ["a b c"]]),
     r"refs: each reference needs one line per hypothesis \(2\); got reference lengths \[2, 1\]"),
    ((["a b c", "d e"], ["a b c", "d e"], ["a b c"]), r"got reference lengths \[1\]"),
    (([], ["a"], ["a"]), "hyps_a is empty"),
    ((["a", 3], ["a", "b"], ["a", "b"]), "hyps_a: every line must be a string; line 2 is 3"),
    ((42, ["a"], ["a"]), "hyps_a must be a file path or a list of strings; got int"),
    ((["a"], ["a"], 42), "refs must be a reference file, a list of reference lines"),
    (("/no/such/file.txt", ["a"], ["a"]), "hyps_a: file '/no/such/file.txt' not found"),
    ((["a b c", "d e f"], ["a b c", "d e f"], ["a b c", "d e f"]),
     "fewer than 2 sentences differ in their BLEU statistics"),
])
def test_estimate_errors(args, match):
    with pytest.raises(InputError, match=match):
        bleu.estimate(*args, n_resamples=100)


def test_estimate_option_errors():
    a, b, refs, _ = noisy_corpus(10, 6)
    with pytest.raises(InputError, match="tokenize must be one of .*'13a'"):
        bleu.estimate(a, b, refs, tokenize="14a")
    with pytest.raises(InputError, match="smooth_method must be one of"):
        bleu.estimate(a, b, refs, smooth_method="exponential")
    with pytest.raises(InputError, match="lowercase must be True or False"):
        bleu.estimate(a, b, refs, lowercase="yes")


def test_fit_delta_laplace_recovers_process_parameters():
    gen = np.random.default_rng(12)
    d = bleu.draw_effects(gen, 1, 20000, 1.0, 0.2, 26.0)[0]
    fit = bleu.fit_delta_laplace(d)
    assert abs(fit.p0 - 0.2) < 4 * fit.p0_se
    assert abs(fit.b0 - 26.0) < 4 * fit.b0_se
    assert abs(fit.mu - (-2 / (20000 * 0.8))) < 4 * fit.b / math.sqrt(16000)
    with pytest.raises(InputError, match="need at least 2 non-zero swap effects"):
        bleu.fit_delta_laplace(np.array([0.0, 0.0, 1.0]))
    with pytest.raises(InputError, match="effects must be finite"):
        bleu.fit_delta_laplace(np.array([np.nan, 1.0]))
    with pytest.raises(InputError, match="effects must hold at least one value"):
        bleu.fit_delta_laplace(np.array([]))
