"""Shared test fixtures and the R (lme4) availability policy.

Tests that need R are marked ``@pytest.mark.requires_r``.  They skip when
R with lme4 is not installed, and fail instead when ``NLPOWER_REQUIRE_R=1``
(set by ``.ci/run``) so the cross-checks can never silently vanish in CI.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference"
FIXTURES = ROOT / "fixtures"


@functools.lru_cache(maxsize=1)
def r_status() -> tuple[bool, str]:
    """(available, reason): is ``Rscript`` on PATH with lme4 loadable?"""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return False, "Rscript not found on PATH"
    try:
        proc = subprocess.run(
            [rscript, "-e", "suppressMessages(library(lme4)); cat(format(packageVersion('lme4')))"],
            capture_output=True, text=True, timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"Rscript failed to start: {exc}"
    if proc.returncode != 0:
        return False, f"lme4 not loadable in R: {proc.stderr.strip()[-300:]}"
    return True, f"lme4 {proc.stdout.strip()}"


def require_r() -> None:
    """Skip (or fail when NLPOWER_REQUIRE_R=1) unless R with lme4 is available."""
    ok, reason = r_status()
    if ok:
        return
    if os.environ.get("NLPOWER_REQUIRE_R") == "1":
        pytest.fail(f"NLPOWER_REQUIRE_R=1 but R/lme4 is unavailable: {reason}")
    pytest.skip(f"R/lme4 unavailable: {reason}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_r") is not None:
        require_r()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """A ``requires_r`` test that needs rpy2 skips when R is present but rpy2 is not.

    Whichever way the test reaches ``engine="lme4"`` (a fit, a grid, a refit),
    the engine raises :class:`~nlpower.errors.EngineUnavailableError`; that is
    a skip with its install hint, not a failure -- unless ``NLPOWER_REQUIRE_R=1``.
    """
    outcome = yield
    report = outcome.get_result()
    if (call.excinfo is None or item.get_closest_marker("requires_r") is None
            or os.environ.get("NLPOWER_REQUIRE_R") == "1"):
        return
    from nlpower.errors import EngineUnavailableError

    if call.excinfo.errisinstance(EngineUnavailableError):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: engine='lme4' unavailable: {call.excinfo.value}")


def run_rscript(script: Path | str, *args: str, timeout: float = 600) -> str:
    """Run an R script with Rscript and return its stdout (raises on failure)."""
    require_r()
    proc = subprocess.run(
        ["Rscript", "--vanilla", str(script), *args],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"Rscript {script} failed:\n{proc.stderr}")
    return proc.stdout


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    return REFERENCE


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


def fake_power_result(**fields):
    """A PowerResult built from a few fields (the rest neutral), for fake cell functions."""
    from nlpower.powersim.result import PowerResult

    record = {"power": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "se": 0.0,
              "type_m": float("nan"), "type_s": float("nan"), "mean_estimate": float("nan"),
              "n_failed": 0, "n_singular": 0, "n_sims": 0, "n_rejected": 0, "test": "z",
              "method": "simulate", "engine": "fake", "alternative": "two-sided", "alpha": 0.05, "coding": "sum",
              "n_nonconverged": 0, "rejection_rate": float("nan"), "effect": 0.0,
              "mean_difference": 0.0, "type1": None, "n_type1": None, "n_type1_sims": None,
              "design": {"n_workers": 2, "n_items": 2}, "REML": False, "notes": [], "seed": None, "version": "0"}
    ci = fields.pop("ci", None)
    if ci is not None:
        fields["ci_low"], fields["ci_high"] = ci
    record.update(fields)
    return PowerResult.from_record(record)
