"""One result type for simulated power: :class:`PowerResult`.

Every power nlpower simulates (or, where it can, computes exactly) returns a
``PowerResult``: the paper's model on a crossed design (:func:`nlpower.power`
with parameters, its grids, ``mde`` and ``plan``), a term of a fitted model
(``nlpower.power(fit, term=...)``, ``power_curve``), a one-judgement
head-to-head comparison (:func:`nlpower.preference.power`) and the user's
own simulator and test (:func:`nlpower.simulate_power`).

Design
------
* **The core** is the same fields for every kind: ``power`` with its Monte
  Carlo ``se`` and Wilson ``ci``, ``n_sims``, ``n_rejected``,
  ``rejection_rate``, Type-S and Type-M with their intervals, ``effect``,
  ``test``, ``alpha``, ``alternative``, ``method``, ``engine``, the
  replicates' diagnostics (``n_failed``, ``n_singular``,
  ``n_nonconverged``, ``first_error``, ``mean_estimate``), the Type I error
  when measured (``type1`` and its interval), the ``seed`` record,
  ``version``, ``notes``, the wall time (``elapsed``), the
  :class:`~nlpower.montecarlo.MonteCarloSummary` (``mc``) and the kept
  ``replicates``.  A field that means nothing for a kind takes its neutral
  value (0 fits failed, no engine).
* **The study** (``result.study``, :mod:`.studies`) is a small frozen
  descriptor of what was studied, one class per kind: :class:`RatingsStudy`
  (the design and the true parameters of the paper's model),
  :class:`ModelStudy` (the hypothesis, the generating and analysis models),
  :class:`PreferenceStudy` (the judges and outcome probabilities),
  :class:`CallbackStudy` (the callbacks' parameters).  Its fields read as
  the result's own: ``result.design``, ``result.params``,
  ``result.hypothesis``, ``result.p_win``; one of another kind raises an
  ``AttributeError`` that says so.  ``result.kind`` names the kind.
* **Display** follows the kind: ``summary()``, ``to_frame()``, ``repr`` and
  ``_repr_html_`` print what each kind always printed; ``methods()`` writes
  the methods paragraph of every kind.
* **Records** keep each kind's keys (:mod:`.records`): checkpoints and grid
  files written before the types were one load unchanged, and
  ``from_record`` finds the kind from the keys.

The former names -- ``ModelPowerResult``, ``PreferencePowerResult``,
``SimulatedPowerResult`` -- are this class (aliases: ``isinstance`` works).
"""

from .core import PowerResult, Replicates
from .records import design_record
from .studies import CallbackStudy, ModelStudy, PreferenceStudy, RatingsStudy, StudyKind

__all__ = ["CallbackStudy", "ModelStudy", "PowerResult", "PreferenceStudy", "RatingsStudy",
           "Replicates", "StudyKind", "design_record"]
