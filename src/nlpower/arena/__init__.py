"""Arena leaderboards: Bradley-Terry scores of K systems from paired votes, with ties.

:func:`bradley_terry` fits scores from a table of votes (ties by Davidson or
Rao-Kupper, model-based, sandwich and bootstrap intervals, worker/prompt
random effects through :func:`nlpower.glmer`).  See ``docs/arena.md``.
"""

from __future__ import annotations

from .fit import bradley_terry
from .result import ELO_SCALE, BradleyTerryFit
from .votes import read_votes

__all__ = ["ELO_SCALE", "BradleyTerryFit", "bradley_terry", "read_votes"]
