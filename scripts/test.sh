#!/usr/bin/env bash
# Install nlpower with its test dependencies in .venv, then lint, type-check, build
# the documentation site (strict) and run the test suite on 2 cores.  This is the README's test command; .ci/run
# calls it unchanged.  The lme4 cross-checks run when R with lme4 is installed
# (they skip otherwise, or fail when NLPOWER_REQUIRE_R=1).
set -euo pipefail
cd "$(dirname "$0")/.."

extras="dev,dask,docs"
if command -v Rscript >/dev/null 2>&1; then
  extras="$extras,r"          # rpy2 for the optional engine="lme4"
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"

.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
# The documentation site (API reference from the docstrings) must build in strict mode;
# the tutorials in docs/tutorials/ are executed by the suite (tests/docs/).
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -q -d "$(mktemp -d)"
MPLBACKEND=Agg .venv/bin/python -m pytest -n 2 -q -p no:cacheprovider "$@"
