"""Head-to-head (preference) evaluations with one judgement per person (Card et al. 2020, Fig. 1).

``n`` people each compare one pair of outputs of systems A and B: B wins with
probability ``p_win``, draws with ``p_draw``.  :func:`power` gives exact power,
Type-M and Type-S of the binomial (sign) or score z-test; :func:`mde` the
smallest detectable preference; :func:`sample_size` the judges needed;
:func:`power_grid` runs a grid on the package's runner; :func:`figure1`
redraws the paper's Fig. 1.  Several judgements per worker and item pair need
the mixed model instead (:mod:`nlpower.outcomes`).  See ``docs/preference.md``.
"""

from .grid import PreferenceProblem, power_grid
from .planning import PreferenceMDEResult, PreferenceSampleSizeResult, mde, sample_size
from .plots import figure1, plot_preference_grid
from .power import PreferencePowerResult, check_probabilities, power

__all__ = [
    "PreferenceMDEResult",
    "PreferencePowerResult",
    "PreferenceProblem",
    "PreferenceSampleSizeResult",
    "check_probabilities",
    "figure1",
    "mde",
    "plot_preference_grid",
    "power",
    "power_grid",
    "sample_size",
]
