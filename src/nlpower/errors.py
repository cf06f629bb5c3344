"""Exception and warning types raised by nlpower.

Every error a user can trigger with bad input is an :class:`InputError`
(a ``ValueError``), so ``except ValueError`` keeps working, while
``except nlpower.NlpowerError`` catches everything the package raises on
purpose.  Messages name the argument, show the bad value, list what is
allowed and say what to do.
"""

from __future__ import annotations


class NlpowerError(Exception):
    """Base class of every exception nlpower raises on purpose."""


class InputError(NlpowerError, ValueError):
    """Bad input from the user: a wrong argument, column, value or file."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type (e.g. ``rng="abc"``).

    Also a ``TypeError``, so ``except TypeError`` keeps working as for any
    Python function given the wrong type.
    """


class FormulaError(InputError):
    """A model formula that cannot be parsed or names unknown columns.

    ``position`` is the 0-based character offset of the offending token
    (or ``None`` when the problem is not tied to one token).
    """

    def __init__(self, message: str, formula: str | None = None, position: int | None = None):
        self.formula = formula
        self.position = position
        if formula is not None and position is not None:
            message = f"{message}\n  {formula}\n  {' ' * position}^"
        super().__init__(message)


class DesignError(InputError):
    """An impossible or unsupported study design (allocation, sizes, systems)."""


class RatingsError(InputError):
    """A rating file or data frame that cannot be used as it is."""


class FitError(NlpowerError, RuntimeError):
    """A model fit that failed (as opposed to one that converged with warnings)."""


class EngineUnavailableError(NlpowerError, ImportError):
    """An optional engine (e.g. lme4 through rpy2) is not installed."""


class CheckpointError(NlpowerError):
    """A checkpoint file that does not belong to the grid being run."""


class OutputError(NlpowerError, OSError):
    """An output file that could not be written (disk full, no permission); nothing was replaced."""


class NlpowerWarning(UserWarning):
    """Base class of nlpower's warnings."""


class ConvergenceWarning(NlpowerWarning):
    """The optimiser stopped without meeting its convergence criteria."""


class SingularFitWarning(NlpowerWarning):
    """A fit on the boundary: some variance component is (near) zero."""


class SizeWarning(NlpowerWarning):
    """A test whose measured Type I error at effect 0 is above ``alpha`` on a design."""


__all__ = [
    "CheckpointError",
    "ConvergenceWarning",
    "DesignError",
    "EngineUnavailableError",
    "FitError",
    "FormulaError",
    "InputError",
    "InputTypeError",
    "NlpowerError",
    "NlpowerWarning",
    "RatingsError",
    "SingularFitWarning",
    "SizeWarning",
]
