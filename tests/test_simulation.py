"""simulate / simulate_y: moments against the generative model, Likert, seeds, errors.

Monte Carlo checks use tolerances derived from the standard error of the
statistic being checked (ANOVA mean squares are scaled chi-square; sample
variances of normal linear forms have SD ``var * sqrt(2 / (R - 1))``), with
``Z`` standard errors of slack.  Nothing is compared with numbers copied
from a run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower import presets
from nlpower.design import CrossedDesign, LayoutArrays
from nlpower.errors import DesignError, InputError
from nlpower.params import LMMParams, MultiSystemParams
from nlpower.simulation import (
    SimulatedRatings,
    likert_round,
    simulate,
    simulate_y,
    to_likert_scale,
)

Z = 4.5  # standard errors of slack for Monte Carlo checks

STRONG = LMMParams(beta0=0.5, effect=0.07, sd_worker=0.1, sd_worker_slope=0.08, sd_item=0.12,
                   sd_item_slope=0.1, sigma=0.2)


# ------------------------------------------------------------------ helpers
def two_way_anova(z: np.ndarray) -> dict[str, float]:
    """Mean squares of a (workers x items) table with one observation per cell."""
    w, i = z.shape
    grand = z.mean()
    rows = z.mean(axis=1)
    cols = z.mean(axis=0)
    resid = z - rows[:, None] - cols[None, :] + grand
    return {
        "ms_w": i * np.sum((rows - grand) ** 2) / (w - 1),
        "ms_i": w * np.sum((cols - grand) ** 2) / (i - 1),
        "ms_e": np.sum(resid**2) / ((w - 1) * (i - 1)),
        "mean": grand,
    }


def ms_sd(expected: float, df: int) -> float:
    """SD of a mean square MS ~ E[MS] chi2_df / df."""
    return expected * np.sqrt(2.0 / df)


def exact_var(a: LayoutArrays, params, c: np.ndarray) -> float:
    """Exact variance of the linear form c'y under the generative model (any design)."""
    w, i, s = a.worker, a.item, a.system
    total = params.sigma**2 * np.sum(c**2)
    if isinstance(params, LMMParams):
        x = np.asarray(params.x_values)[s]
        parts = [(params.sd_worker, w, a.n_workers, c), (params.sd_worker_slope, w, a.n_workers, c * x),
                 (params.sd_item, i, a.n_items, c), (params.sd_item_slope, i, a.n_items, c * x)]
        for sd, codes, n, weights in parts:
            total += sd**2 * np.sum(np.bincount(codes, weights=weights, minlength=n) ** 2)
    else:
        k = a.n_systems
        total += params.sd_worker**2 * np.sum(np.bincount(w, weights=c, minlength=a.n_workers) ** 2)
        total += params.sd_item**2 * np.sum(np.bincount(i, weights=c, minlength=a.n_items) ** 2)
        ws = np.bincount(w * k + s, weights=c, minlength=a.n_workers * k).reshape(-1, k)
        its = np.bincount(i * k + s, weights=c, minlength=a.n_items * k).reshape(-1, k)
        total += np.sum(ws**2 * np.asarray(params.sd_worker_systems) ** 2)
        total += np.sum(its**2 * np.asarray(params.sd_item_systems) ** 2)
    return float(total)


def exact_mean(a: LayoutArrays, params, c: np.ndarray) -> float:
    if isinstance(params, LMMParams):
        mu = params.beta0 + params.effect * np.asarray(params.x_values)[a.system]
    else:
        mu = np.asarray(params.system_means)[a.system]
    return float(c @ mu)


# ------------------------------------------------- ANOVA moment recovery
@pytest.mark.parametrize("params", [STRONG, presets.high_variance(0.1)], ids=["strong", "high_variance"])
def test_anova_recovers_all_five_sds(params):
    """40 workers x 200 items x 2 systems, fully crossed (the paper's design).

    With x = +-1, the per-(worker, item) mean m = (y_A + y_B)/2 and half
    difference d = (y_B - y_A)/2 are two independent two-way tables:
    m = beta0 + W0 + I0 + e_m, d = beta1 + W1 + I1 + e_d, var(e_m) = var(e_d) = sigma^2/2.
    """
    nw, ni, reps = 40, 200, 4
    design = CrossedDesign(nw, ni)
    sims = simulate(design, params, n_sims=reps, rng=20240611)
    assert isinstance(sims, SimulatedRatings)
    a = design.arrays()
    est = {k: [] for k in ("v_w0", "v_w1", "v_i0", "v_i1", "v_e", "b0", "b1")}
    for y in sims.y:
        table = np.zeros((nw, ni, 2))
        table[a.worker, a.item, a.system] = y
        m = two_way_anova(table.mean(axis=2))
        d = two_way_anova((table[..., 1] - table[..., 0]) / 2)
        est["v_w0"].append((m["ms_w"] - m["ms_e"]) / ni)
        est["v_i0"].append((m["ms_i"] - m["ms_e"]) / nw)
        est["v_w1"].append((d["ms_w"] - d["ms_e"]) / ni)
        est["v_i1"].append((d["ms_i"] - d["ms_e"]) / nw)
        est["v_e"].append(m["ms_e"] + d["ms_e"])
        est["b0"].append(m["mean"])
        est["b1"].append(d["mean"])
    e2 = params.sigma**2 / 2
    df_e = (nw - 1) * (ni - 1)
    checks = {
        # name: (true value, SE of one replicate's estimate)
        "v_w0": (params.sd_worker**2, np.hypot(ms_sd(ni * params.sd_worker**2 + e2, nw - 1), ms_sd(e2, df_e)) / ni),
        "v_w1": (params.sd_worker_slope**2,
                 np.hypot(ms_sd(ni * params.sd_worker_slope**2 + e2, nw - 1), ms_sd(e2, df_e)) / ni),
        "v_i0": (params.sd_item**2, np.hypot(ms_sd(nw * params.sd_item**2 + e2, ni - 1), ms_sd(e2, df_e)) / nw),
        "v_i1": (params.sd_item_slope**2,
                 np.hypot(ms_sd(nw * params.sd_item_slope**2 + e2, ni - 1), ms_sd(e2, df_e)) / nw),
        "v_e": (params.sigma**2, np.hypot(ms_sd(e2, df_e), ms_sd(e2, df_e))),
        "b0": (params.beta0, np.sqrt(params.sd_worker**2 / nw + params.sd_item**2 / ni + e2 / (nw * ni))),
        "b1": (params.effect,
               np.sqrt(params.sd_worker_slope**2 / nw + params.sd_item_slope**2 / ni + e2 / (nw * ni))),
    }
    for name, (truth, se1) in checks.items():
        se = se1 / np.sqrt(reps)
        got = float(np.mean(est[name]))
        assert abs(got - truth) < Z * se, f"{name}: {got:.5g} vs {truth:.5g} (SE {se:.3g})"
    # the check has teeth: the strong scenario's SE is small relative to each variance
    if params is STRONG:
        for name in ("v_w0", "v_w1", "v_i0", "v_i1", "v_e"):
            truth, se1 = checks[name]
            assert Z * se1 / np.sqrt(reps) < 0.6 * truth


def test_anova_multi_system_per_system_components():
    """K = 3, fully crossed paired: each system's table has worker variance
    sd_worker^2 + s_w[s]^2, item variance sd_item^2 + s_i[s]^2, residual sigma^2;
    the system-averaged table has sd_worker^2 + sum(s_w^2)/K^2 etc."""
    m = MultiSystemParams(0.5, (0.1, -0.05), 0.08, (0.05, 0.1, 0.15), 0.1, (0.12, 0.06, 0.0), 0.2)
    nw, ni, k = 40, 150, 3
    design = CrossedDesign(nw, ni, k)
    df = simulate(design, m, rng=7)
    a = design.arrays()
    table = np.zeros((nw, ni, k))
    table[a.worker, a.item, a.system] = df.rating.to_numpy()
    sw, si = np.asarray(m.sd_worker_systems), np.asarray(m.sd_item_systems)
    df_e = (nw - 1) * (ni - 1)
    for s in range(k):
        r = two_way_anova(table[..., s])
        e = m.sigma**2
        vw, vi = m.sd_worker**2 + sw[s] ** 2, m.sd_item**2 + si[s] ** 2
        assert abs((r["ms_w"] - r["ms_e"]) / ni - vw) < Z * np.hypot(ms_sd(ni * vw + e, nw - 1), ms_sd(e, df_e)) / ni
        assert abs((r["ms_i"] - r["ms_e"]) / nw - vi) < Z * np.hypot(ms_sd(nw * vi + e, ni - 1), ms_sd(e, df_e)) / nw
        assert abs(r["ms_e"] - e) < Z * ms_sd(e, df_e)
        se_mean = np.sqrt(vw / nw + vi / ni + e / (nw * ni))
        assert abs(r["mean"] - m.system_means[s]) < Z * se_mean
    r = two_way_anova(table.mean(axis=2))
    e = m.sigma**2 / k
    vw = m.sd_worker**2 + np.sum(sw**2) / k**2
    vi = m.sd_item**2 + np.sum(si**2) / k**2
    assert abs((r["ms_w"] - r["ms_e"]) / ni - vw) < Z * np.hypot(ms_sd(ni * vw + e, nw - 1), ms_sd(e, df_e)) / ni
    assert abs((r["ms_i"] - r["ms_e"]) / nw - vi) < Z * np.hypot(ms_sd(nw * vi + e, ni - 1), ms_sd(e, df_e)) / nw


# ------------------------------------- exact variance of linear forms, any design
DESIGNS = {
    "crossed": CrossedDesign(6, 10),
    "rotation": CrossedDesign(7, 12, workers_per_item=3),
    "nested": CrossedDesign(5, 12, workers_per_item=2, items="nested"),
    "nested4": CrossedDesign(5, 16, 4, workers_per_item=3, items="nested"),
    "paired3": CrossedDesign(4, 6, 3, workers_per_item=2),
}
MULTI3 = MultiSystemParams(0.5, (0.1, -0.05), 0.08, (0.05, 0.1, 0.15), 0.1, (0.12, 0.06, 0.0), 0.2)
MULTI4 = MultiSystemParams(0.6, (0.04, -0.05, -0.03), 0.05, (0.04, 0.05, 0.0, 0.1), 0.07,
                           (0.16, 0.19, 0.16, 0.1), 0.16)
CASES = [
    ("crossed", STRONG), ("rotation", STRONG), ("nested", STRONG),
    ("crossed", STRONG.to_coding("half")), ("rotation", LMMParams(0.4, 0.1, 0.1, 0.0, 0.2, 0.0, 0.1, "treatment")),
    ("nested4", MULTI4), ("paired3", MULTI3), ("crossed", STRONG.to_multi_system()),
]


@pytest.mark.parametrize(("design_name", "params"), CASES,
                         ids=[f"{d}-{type(p).__name__}-{p.coding}-{j}" for j, (d, p) in enumerate(CASES)])
def test_linear_forms_have_the_models_mean_and_variance(design_name, params):
    """For fixed weights c, c'y is normal with mean c'mu and a variance that sums
    each component's SD^2 times the squared per-level totals of c (times x for
    slopes).  Checked for a random c and for the baseline-vs-last-system contrast."""
    design = DESIGNS[design_name]
    a = design.arrays()
    reps = 3000
    y = simulate_y(a, params, reps, np.random.default_rng(99))
    assert y.shape == (reps, a.n_ratings)
    wrng = np.random.default_rng(5)
    last = a.n_systems - 1
    contrast = np.where(a.system == last, 1.0, 0.0) / np.sum(a.system == last) - \
        np.where(a.system == 0, 1.0, 0.0) / np.sum(a.system == 0)
    for c in (wrng.normal(size=a.n_ratings), contrast):
        v = exact_var(a, params, c)
        vals = y @ c
        assert abs(vals.mean() - exact_mean(a, params, c)) < Z * np.sqrt(v / reps)
        assert abs(vals.var(ddof=1) - v) < Z * v * np.sqrt(2.0 / (reps - 1))


def test_exact_variance_helper_has_teeth():
    # dropping the item slope changes the contrast variance by far more than the tolerance
    design = DESIGNS["crossed"]
    a = design.arrays()
    c = np.where(a.system == 1, 1.0, -1.0) / (a.n_ratings / 2)
    v_full = exact_var(a, STRONG, c)
    v_no_slope = exact_var(a, LMMParams(0.5, 0.07, 0.1, 0.08, 0.12, 0.0, 0.2), c)
    assert v_full - v_no_slope > 3 * Z * v_full * np.sqrt(2.0 / 2999)


def test_nested_items_carry_one_system_and_intercept_variance():
    # items="nested": the item effect is I0 + I1 x for its own system only
    design = CrossedDesign(3, 8, items="nested")
    df = simulate(design, STRONG, rng=3)
    assert df.groupby("item", observed=True).system.nunique().eq(1).all()
    assert set(df.system) == {"A", "B"}


# ------------------------------------------------------- codings and seeds
def test_equivalent_codings_give_identical_draws():
    d = CrossedDesign(5, 9)
    y_sum = simulate(d, STRONG, rng=11).rating.to_numpy()
    y_half = simulate(d, STRONG.to_coding("half"), rng=11).rating.to_numpy()
    np.testing.assert_allclose(y_half, y_sum, rtol=0, atol=1e-12)
    p0 = LMMParams(0.5, 0.1, 0.2, 0.0, 0.1, 0.0, 0.3)
    y_t = simulate(d, p0.to_coding("treatment"), rng=11).rating.to_numpy()
    np.testing.assert_allclose(y_t, simulate(d, p0, rng=11).rating.to_numpy(), atol=1e-12)


def test_common_random_numbers_across_effects():
    d = CrossedDesign(4, 6)
    y0 = simulate(d, STRONG.with_effect(0.0), n_sims=3, rng=5).y
    y1 = simulate(d, STRONG.with_effect(0.2), n_sims=3, rng=5).y
    x = d.layout().x.to_numpy()
    np.testing.assert_allclose(y1 - y0, np.broadcast_to(0.2 * x, y0.shape), atol=1e-12)


def test_same_seed_same_data_different_seed_different_data():
    d = CrossedDesign(4, 6, workers_per_item=2)
    p = presets.high_variance(0.1)
    a, b = simulate(d, p, rng=123), simulate(d, p, rng=123)
    pd.testing.assert_frame_equal(a, b)
    c = simulate(d, p, rng=124)
    assert not np.allclose(a.rating, c.rating)
    ss = np.random.SeedSequence(8)
    np.testing.assert_array_equal(simulate(d, p, n_sims=2, rng=ss).y, simulate(d, p, n_sims=2, rng=np.random.SeedSequence(8)).y)
    g = np.random.default_rng(1)
    first, second = simulate(d, p, rng=g), simulate(d, p, rng=g)
    assert not np.allclose(first.rating, second.rating)  # a Generator is advanced


def test_output_shapes_and_accessors():
    d = CrossedDesign(3, 5)
    df = simulate(d, STRONG, rng=0)
    assert list(df.columns) == ["worker", "item", "system", "x", "rating"]
    assert len(df) == d.n_ratings
    sims = simulate(d, STRONG, n_sims=4, rng=0)
    assert isinstance(sims, SimulatedRatings)
    assert sims.y.shape == (4, d.n_ratings) and sims.n_sims == 4 and sims.n_ratings == 30
    f2 = sims.frame(2)
    np.testing.assert_array_equal(f2.rating.to_numpy(), sims.y[2])
    pd.testing.assert_frame_equal(f2.drop(columns="rating"), d.layout())
    np.testing.assert_array_equal(sims.frame(-1).rating.to_numpy(), sims.y[3])
    long = sims.to_frame()
    assert len(long) == 4 * 30 and list(long.columns)[0] == "sim"
    np.testing.assert_array_equal(long.loc[long.sim == 1, "rating"].to_numpy(), sims.y[1])
    assert repr(sims) == "SimulatedRatings(n_sims=4, n_ratings=30)"
    assert "4 replicates x 30 ratings (continuous)" in sims.summary()
    multi = simulate(CrossedDesign(3, 4, 3), MULTI3, rng=0)
    assert list(multi.columns) == ["worker", "item", "system", "rating"]


# ----------------------------------------------------------------- Likert
def test_likert_rounding_rule():
    y = np.array([-0.3, 0.0, 0.124, 0.126, 0.5, 0.874, 0.876, 1.0, 1.7])
    np.testing.assert_allclose(likert_round(y, 5), [0, 0, 0, 0.25, 0.5, 0.75, 1, 1, 1])
    np.testing.assert_array_equal(to_likert_scale(likert_round(y, 5), 5), [1, 1, 1, 2, 3, 4, 5, 5, 5])
    np.testing.assert_array_equal(to_likert_scale(np.array([0.0, 0.5, 1.0]), 7, low=0), [0, 3, 6])
    np.testing.assert_allclose(likert_round(np.array([0.2, 0.8]), 2), [0, 1])


@pytest.mark.parametrize("k", [2, 5, 7])
def test_likert_output_on_grid_and_consistent_with_latent(k):
    d = CrossedDesign(6, 20)
    p = presets.high_variance(0.1)
    latent = simulate(d, p, n_sims=3, rng=42).y
    lik = simulate(d, p, n_sims=3, rng=42, likert=k)
    assert lik.likert == k and "Likert" in lik.summary() and f"likert={k}" in repr(lik)
    assert lik.y.min() >= 0 and lik.y.max() <= 1
    grid = np.arange(k) / (k - 1)
    assert np.all(np.isclose(lik.y[..., None], grid).any(axis=-1))
    np.testing.assert_array_equal(lik.y, likert_round(latent, k))
    # nearest grid point: the distance to the latent value is at most half a step (unless clipped)
    inside = (latent >= 0) & (latent <= 1)
    assert np.all(np.abs(lik.y - latent)[inside] <= 0.5 / (k - 1) + 1e-12)


# ----------------------------------------------------------------- errors
def test_simulate_errors():
    d = CrossedDesign(3, 4)
    with pytest.raises(DesignError, match=r"design must be a CrossedDesign; got DataFrame.*CrossedDesign\(n_workers"):
        simulate(pd.DataFrame(), STRONG)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"params must be LMMParams or MultiSystemParams; got dict\. Build one"):
        simulate(d, {"effect": 0.1})  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"got DatasetPreset\. For a dataset preset pass its \.params"):
        simulate(d, presets.dataset("wmt19"))  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"n_sims must be >= 1; got 0"):
        simulate(d, STRONG, n_sims=0)
    with pytest.raises(InputError, match=r"n_sims must be an integer; got 2\.0"):
        simulate(d, STRONG, n_sims=2.0)  # type: ignore[arg-type]
    for bad in (1, True, 4.0, "5"):
        with pytest.raises(InputError, match=r"likert must be None \(continuous ratings\) or the number of scale points"):
            simulate(d, STRONG, likert=bad)  # type: ignore[arg-type]
    with pytest.raises(DesignError, match=r"LMMParams describe two systems but the design has 3 \(A, B, C\); use MultiSystemParams with 2 effects"):
        simulate(CrossedDesign(3, 4, 3), STRONG)
    with pytest.raises(DesignError, match=r"the parameters describe 3 systems but the design has 2 \(A, B\)"):
        simulate(d, MULTI3)


def test_simulate_y_errors():
    with pytest.raises(DesignError, match=r"LMMParams describe two systems but the design has 3"):
        simulate_y(CrossedDesign(3, 4, 3).arrays(), STRONG, 1, 0)
    with pytest.raises(DesignError, match=r"the parameters describe 3 systems .* but the design has 2"):
        simulate_y(CrossedDesign(3, 4).arrays(), MULTI3, 1, 0)
    with pytest.raises(InputError, match=r"params must be LMMParams or MultiSystemParams; got str"):
        simulate_y(CrossedDesign(3, 4).arrays(), "high", 1, 0)  # type: ignore[arg-type]


def test_frame_index_error():
    sims = simulate(CrossedDesign(3, 4), STRONG, n_sims=2, rng=0)
    with pytest.raises(InputError, match=r"i must be <= 1; got 2"):
        sims.frame(2)


# ----------------------------------------------------------------- fixtures
def _load_make_fixtures(fixtures_dir):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", fixtures_dir / "make_fixtures.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fixture_files_are_reproduced_by_their_script(fixtures_dir, capsys):
    mod = _load_make_fixtures(fixtures_dir)
    assert mod.main(["--check"]) == 0, capsys.readouterr().err
    for name, df in mod.build().items():
        on_disk = pd.read_csv(fixtures_dir / name)
        assert list(on_disk.columns) == ["worker", "item", "system", "rating"]
        assert on_disk.rating.between(1, 5).all() and on_disk.rating.dtype.kind == "i"
        assert len(on_disk) == len(df)
    total = sum(p.stat().st_size for p in fixtures_dir.iterdir() if p.is_file())
    assert total < 200_000


def test_pilot_fixture_design(fixtures_dir):
    df = pd.read_csv(fixtures_dir / "pilot_ratings.csv")
    assert (df.worker.nunique(), df.item.nunique(), df.system.nunique()) == (8, 40, 2)
    assert df.groupby(["worker", "item"]).system.nunique().eq(2).all()
    nested = pd.read_csv(fixtures_dir / "nested_4sys_ratings.csv")
    assert nested.groupby("item").system.nunique().eq(1).all()
    assert nested.groupby("item").worker.nunique().eq(3).all()
    assert nested.drop_duplicates("item").system.value_counts().eq(15).all()


def test_unbalanced_observed_layout_has_the_models_variance():
    """simulate_y on an arbitrary layout (random 60% of a crossed design's ratings)."""
    full = CrossedDesign(8, 30).layout()
    keep = np.random.default_rng(3).random(len(full)) < 0.6
    a = LayoutArrays.from_frame(full[keep])
    reps = 3000
    for params in (STRONG, STRONG.to_multi_system()):
        y = simulate_y(a, params, reps, np.random.default_rng(17))
        c = np.random.default_rng(4).normal(size=a.n_ratings)
        v = exact_var(a, params, c)
        vals = y @ c
        assert abs(vals.mean() - exact_mean(a, params, c)) < Z * np.sqrt(v / reps)
        assert abs(vals.var(ddof=1) - v) < Z * v * np.sqrt(2.0 / (reps - 1))


# ----------------------------------------------------------- lme4 cross-check
R_FIT = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
m <- lmer(rating ~ x + (1 + x || worker) + (1 + x || item), data = d, REML = FALSE,
          control = lmerControl(calc.derivs = FALSE))
vc <- as.data.frame(VarCorr(m))
cat(sprintf("%s %.10g\n", c("b0", "b1"), fixef(m)), sep = "")
cat(sprintf("%s:%s %.10g\n", sub("\\.[0-9]+$", "", vc$grp), ifelse(is.na(vc$var1), "", vc$var1), vc$vcov), sep = "")
"""


@pytest.mark.requires_r
def test_lme4_recovers_the_simulated_parameters(tmp_path):
    """lme4 1.1-31 (ML) fitted to one simulated 30 x 150 x 2 data set recovers the
    sum-coded parameters within 4.5 ANOVA standard errors (ML and ANOVA
    estimates coincide up to O(1/W) for balanced designs): the x column and
    the parameter semantics are lme4's."""
    from conftest import run_rscript

    nw, ni = 30, 150
    df = simulate(CrossedDesign(nw, ni), STRONG, rng=31)
    csv = tmp_path / "sim.csv"
    df.to_csv(csv, index=False)
    script = tmp_path / "fit.R"
    script.write_text(R_FIT)
    out = dict(line.split() for line in run_rscript(script, str(csv)).strip().splitlines())
    p = STRONG
    e2 = p.sigma**2 / 2
    df_e = (nw - 1) * (ni - 1)

    def se_var(v, n_other, n_lev):
        return np.hypot(ms_sd(n_other * v + e2, n_lev - 1), ms_sd(e2, df_e)) / n_other

    checks = {
        "b0": (p.beta0, np.sqrt(p.sd_worker**2 / nw + p.sd_item**2 / ni + e2 / (nw * ni))),
        "b1": (p.effect, np.sqrt(p.sd_worker_slope**2 / nw + p.sd_item_slope**2 / ni + e2 / (nw * ni))),
        "worker:(Intercept)": (p.sd_worker**2, se_var(p.sd_worker**2, ni, nw)),
        "worker:x": (p.sd_worker_slope**2, se_var(p.sd_worker_slope**2, ni, nw)),
        "item:(Intercept)": (p.sd_item**2, se_var(p.sd_item**2, nw, ni)),
        "item:x": (p.sd_item_slope**2, se_var(p.sd_item_slope**2, nw, ni)),
        "Residual:": (p.sigma**2, np.sqrt(2) * ms_sd(e2, df_e)),
    }
    for key, (truth, se) in checks.items():
        assert key in out, f"{key} missing from lme4 output {out}"
        got = float(out[key])
        assert abs(got - truth) < Z * se, f"{key}: lme4 {got:.5g} vs true {truth:.5g} (SE {se:.3g})"


@pytest.mark.parametrize(("coding", "xs"), [("sum", (-1, 1)), ("half", (-0.5, 0.5)), ("treatment", (0, 1))])
def test_x_column_is_in_the_parameters_coding(coding, xs):
    d = CrossedDesign(3, 4)
    p = LMMParams(0.5, 0.1, 0.1, 0.0, 0.1, 0.0, 0.2, coding=coding)
    df = simulate(d, p, rng=0)
    assert df.loc[df.system == "A", "x"].eq(xs[0]).all() and df.loc[df.system == "B", "x"].eq(xs[1]).all()
    sims = simulate(d, p, n_sims=2, rng=0)
    assert sims.coding == coding and set(sims.layout.x) == set(map(float, xs))
