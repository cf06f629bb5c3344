#!/usr/bin/env bash
# The README's main job, with the embedded pure-Python engine (no R needed):
# fit the bundled pilot rating file, then run the paper's Figure 6 power grid
# (both Table 16 scenarios, 200 replicates per cell) and write grid.csv/grid.png.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e .

.venv/bin/nlpower fit fixtures/pilot_ratings.csv \
  --worker worker --item item --system system --rating rating --scale 1 5
.venv/bin/nlpower grid --preset both --workers 3,10 --items 50,100,500 \
  --effects 0.05,0.1,0.15,0.2 --n-sims 200 --test z --alternative two-sided \
  --seed 2020 --out grid.csv --plot grid.png
