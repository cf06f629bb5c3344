"""Arena leaderboards: Bradley-Terry scores of K systems from paired votes, with ties.

:func:`bradley_terry` fits scores from a table of votes (ties by Davidson or
Rao-Kupper, model-based, sandwich and bootstrap intervals, worker/prompt
random effects through :func:`nlpower.glmer`); :func:`arena_power` simulates
the probability of a correct leaderboard and the power for one pair against
the number of votes, with uniform or adaptive allocation, and
:func:`votes_needed` reads the budget off it.  See ``docs/arena.md``.
"""

from __future__ import annotations

from .fit import bradley_terry
from .plots import plot_ranking
from .power import ArenaPowerResult, arena_power, votes_needed
from .result import ELO_SCALE, BradleyTerryFit
from .votes import read_votes

__all__ = ["ELO_SCALE", "ArenaPowerResult", "BradleyTerryFit", "arena_power", "bradley_terry",
           "plot_ranking", "read_votes", "votes_needed"]
