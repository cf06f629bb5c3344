"""The Delta–Laplace process for per-sentence swap effects, and its ML fit.

Card et al. (2020), §4 and App. G.1: the effect ``delta_i`` of swapping the
two systems' outputs for sentence ``i`` alone (the change in the corpus-BLEU
difference, in BLEU points) is 0 with probability ``P0`` and otherwise
``Laplace(mu, b)`` with ``mu = -2 dB / (n (1 - P0))`` and ``b = b0 / n``, so
that ``E[sum(delta)] = -2 dB`` and the observed difference is
``dB_hat = -sum(delta) / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["DeltaLaplaceFit", "draw_effects", "draw_parts", "fit_delta_laplace", "laplace_location"]


def laplace_location(n: int, delta: float, p0: float) -> float:
    """``mu = -2 dB / (n (1 - P0))``: the Laplace location that makes ``E[dB_hat] = dB``."""
    return -2.0 * delta / (n * (1.0 - p0))


def draw_parts(rng: np.random.Generator, size: int, n: int, p0: float) -> tuple[np.ndarray, np.ndarray]:
    """The two random parts of ``size`` effect vectors: non-zero indicators and standard Laplace draws.

    The Laplace draws are used only where ``nonzero``.

    ``delta = nonzero * (mu + b * laplace)``: keeping the parts apart lets
    :func:`nlpower.bleu.mde` reuse one set of draws for every ``dB``
    (common random numbers), since ``delta`` is affine in ``mu``.

    A standard Laplace draw is a standard exponential with a fair random
    sign; the sign comes from the uniform that decides ``nonzero`` (given
    ``u >= P0``, ``u`` is uniform on ``[P0, 1)`` and its upper half is a fair
    coin independent of the exponential), which is 4x faster than
    ``Generator.laplace``.
    """
    u = rng.random((size, n))
    nonzero = u >= p0
    laplace = rng.standard_exponential((size, n))
    np.negative(laplace, out=laplace, where=u < 0.5 * (1.0 + p0))
    return nonzero, laplace


def draw_effects(rng: np.random.Generator, size: int, n: int, delta: float, p0: float,
                 b0: float) -> np.ndarray:
    """``size`` vectors of ``n`` swap effects from the Delta–Laplace process, shape ``(size, n)``."""
    nonzero, laplace = draw_parts(rng, size, n, p0)
    mu = laplace_location(n, delta, p0)
    return np.where(nonzero, mu + (b0 / n) * laplace, 0.0)


@dataclass(frozen=True)
class DeltaLaplaceFit:
    """Maximum-likelihood Delta–Laplace fit to per-sentence swap effects.

    The likelihood factorises into a binomial part (how many effects are
    exactly zero) and a Laplace part (the non-zero effects), so the ML
    estimates are ``P0 = n_zero / n``, ``mu = median(non-zero)``,
    ``b = mean |non-zero - mu|``; ``b0 = b * n`` (App. G.1).  ``p0_se`` and
    ``b0_se`` are the asymptotic (Fisher-information) standard errors
    ``sqrt(P0 (1 - P0) / n)`` and ``b0 / sqrt(n - n_zero)``.
    """

    n: int
    n_zero: int
    p0: float
    mu: float
    b: float
    b0: float
    p0_se: float
    b0_se: float
    loglik: float

    def __repr__(self) -> str:
        return (f"DeltaLaplaceFit(n={self.n}, p0={self.p0:.4g}, b0={self.b0:.4g}, "
                f"mu={self.mu:.4g})")


def fit_delta_laplace(effects: np.ndarray, *, zero: np.ndarray | None = None) -> DeltaLaplaceFit:
    """ML fit of the Delta–Laplace mixture to ``effects`` (App. G.1, Fig. 16).

    Parameters
    ----------
    effects : array of shape (n,)
        Per-sentence swap effects in BLEU points.
    zero : boolean array of shape (n,), optional
        Which effects are structurally zero (default: ``effects == 0``).

    Examples
    --------
    >>> import numpy as np
    >>> d = draw_effects(np.random.default_rng(1), 1, 20000, 1.0, 0.2, 26.0)[0]
    >>> fit = fit_delta_laplace(d)
    >>> round(fit.p0, 2), round(fit.b0 / 26.0, 1)
    (0.2, 1.0)
    """
    d = np.asarray(effects, dtype=float).ravel()
    n = d.size
    if n == 0:
        raise InputError("effects must hold at least one value; got an empty array.")
    if not np.all(np.isfinite(d)):
        raise InputError("effects must be finite; got NaN or infinite values.")
    is_zero = d == 0 if zero is None else np.asarray(zero, dtype=bool).ravel()
    nonzero = d[~is_zero]
    n_zero = n - nonzero.size
    if nonzero.size < 2:
        raise InputError(
            f"effects: need at least 2 non-zero swap effects to fit the Laplace part; got "
            f"{nonzero.size} of {n}. The two systems' outputs are (almost) identical.")
    p0 = n_zero / n
    mu = float(np.median(nonzero))
    b = float(np.mean(np.abs(nonzero - mu)))
    loglik = (n_zero * np.log(p0) if n_zero else 0.0) + nonzero.size * np.log1p(-p0) \
        - nonzero.size * np.log(2.0 * b) - float(np.sum(np.abs(nonzero - mu))) / b
    return DeltaLaplaceFit(
        n=n, n_zero=n_zero, p0=p0, mu=mu, b=b, b0=b * n,
        p0_se=float(np.sqrt(p0 * (1.0 - p0) / n)), b0_se=b * n / float(np.sqrt(nonzero.size)),
        loglik=float(loglik),
    )
