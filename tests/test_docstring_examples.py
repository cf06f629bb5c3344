"""Every docstring example of every nlpower module runs (from the repository root: some read
``fixtures/``).  ``doctest: +SKIP`` is for examples that need R or a cluster, nothing else."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import warnings
from pathlib import Path

import pytest

import nlpower

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(m.name for m in pkgutil.walk_packages(nlpower.__path__, "nlpower.")
                 if not m.name.endswith("__main__"))


#: examples that are wrong in modules of other branches (printed output out of date): run,
#: but expected to fail until their owners update them
KNOWN_WRONG: dict[str, str] = {}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch, request):
    if name in KNOWN_WRONG:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_WRONG[name], strict=False))
    module = importlib.import_module(name)
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # examples show results; warnings are tested elsewhere
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE
                                 | doctest.ELLIPSIS, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def _examples() -> list[tuple[str, doctest.Example]]:
    finder = doctest.DocTestFinder()
    return [(t.name, e) for name in MODULES for t in finder.find(importlib.import_module(name))
            for e in t.examples]


def test_the_package_has_examples_to_run():
    assert len(_examples()) > 300


#: what a skipped example may need: R (an R-backed engine) or a cluster
NEEDS_R_OR_CLUSTER = re.compile(r"lme4|engine=.ordinal|rpy2|Rscript|dask|Client\(")


def test_only_examples_that_need_r_or_a_cluster_are_skipped():
    skipped = [f"{where}: {e.source.strip()}" for where, e in _examples()
               if e.options.get(doctest.SKIP) and not NEEDS_R_OR_CLUSTER.search(e.source)]
    assert skipped == []
