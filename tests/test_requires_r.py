"""``pytest -m requires_r`` skips, not fails, the rpy2-backed tests without rpy2 (issue 23, item 18)."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")


def test_engine_unavailable_in_a_requires_r_test_is_a_skip(pytester, monkeypatch):
    monkeypatch.delenv("NLPOWER_REQUIRE_R", raising=False)
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_lme4="""
        import pytest
        from nlpower.errors import EngineUnavailableError

        @pytest.mark.requires_r
        def test_needs_rpy2():
            raise EngineUnavailableError("rpy2 is not installed")

        def test_unmarked_still_fails():
            raise EngineUnavailableError("rpy2 is not installed")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(skipped=1, failed=1)


def test_required_r_still_fails(pytester, monkeypatch):
    monkeypatch.setenv("NLPOWER_REQUIRE_R", "1")
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_lme4="""
        import pytest
        from nlpower.errors import EngineUnavailableError

        @pytest.mark.requires_r
        def test_needs_rpy2():
            raise EngineUnavailableError("rpy2 is not installed")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(failed=1)
