"""``single_threaded``: one BLAS thread inside the block, the previous setting after it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from nlpower.mixed.native._blas import single_threaded


def _blas_threads() -> list[int]:
    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


@pytest.fixture
def two_threads():
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control")
    with threadpool_limits(limits=2, user_api="blas"):
        if max(_blas_threads()) < 2:
            pytest.skip("BLAS is built single-threaded here")
        yield


def test_one_thread_inside_previous_setting_after(two_threads):
    before = _blas_threads()
    with single_threaded():
        assert _blas_threads() == [1] * len(before)
        a = np.random.default_rng(0).standard_normal((50, 50))
        np.linalg.cholesky(a @ a.T + 50 * np.eye(50))       # BLAS runs inside the block
    assert _blas_threads() == before


def test_restored_after_an_exception(two_threads):
    before = _blas_threads()
    with pytest.raises(RuntimeError, match="inside"), single_threaded():
        raise RuntimeError("inside the block")
    assert _blas_threads() == before


def test_disabled_and_worker_threads_leave_the_setting(two_threads):
    before = _blas_threads()
    with single_threaded(enabled=False):
        assert _blas_threads() == before
    seen: list[list[int]] = []

    def work() -> None:
        with single_threaded():
            seen.append(_blas_threads())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [before]
