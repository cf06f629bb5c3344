"""Explicit randomness: one ``rng`` policy for every stochastic entry point.

``rng`` is keyword-only and may be anything :func:`numpy.random.default_rng`
accepts (:data:`RNGLike`).  The rule, like scipy's:

* ``None``, an int or a :class:`~numpy.random.SeedSequence` is a *seed*: the
  same seed always gives the same result (``None`` draws OS entropy, which is
  recorded in the result so the run can be repeated).
* A :class:`~numpy.random.Generator` (or ``BitGenerator``) is a *stream* and is
  consumed: the call draws 128 bits from it to seed its own work, so two calls
  with the same ``Generator`` give different results, and two ``Generator``\\s
  seeded alike give the same results.

Every entry point turns ``rng`` into a root with :func:`root_seed` (once, at
the public boundary); parallel work (replicates, grid cells) gets child
streams from :meth:`~numpy.random.SeedSequence.spawn` or
:func:`nlpower.grid.cell_seed`, so results never depend on ``n_jobs``, on
the backend or on the order in which work is done.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

from .errors import InputError, InputTypeError

#: What ``rng=`` accepts everywhere in nlpower.
RNGLike: TypeAlias = "None | int | np.integer | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator"

__all__ = ["RNGLike", "as_generator", "root_seed", "seed_record", "spawn"]


def root_seed(rng: RNGLike = None) -> np.random.SeedSequence:
    """The root :class:`~numpy.random.SeedSequence` of a run, by the policy above.

    A seed (``None``, int, ``SeedSequence``) is replayed (a ``SeedSequence``
    is copied, so spawning children from the root never changes the caller's
    object); a ``Generator``/``BitGenerator`` is consumed (128 bits drawn from it).
    """
    if isinstance(rng, np.random.SeedSequence):  # a copy, so spawning never changes the caller's
        return np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key, pool_size=rng.pool_size)
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        if rng is not None and int(rng) < 0:
            raise InputError(f"rng must be a non-negative integer (a seed); got {int(rng)}. "
                             f"Pass e.g. rng={-int(rng)}.")
        return np.random.SeedSequence(None if rng is None else int(rng))
    if isinstance(rng, np.random.BitGenerator):
        rng = np.random.Generator(rng)
    if isinstance(rng, np.random.Generator):
        words = rng.integers(0, 2**32, size=4)
        return np.random.SeedSequence([int(w) for w in words])
    raise InputTypeError(
        "rng must be None, an int, a numpy SeedSequence, BitGenerator or Generator; "
        f"got {rng!r} ({type(rng).__name__}). Pass e.g. rng=2020."
    )


def as_generator(rng: RNGLike = None) -> np.random.Generator:
    """A ``Generator`` for one stream of draws, by the policy above.

    A ``Generator`` is returned as it is (its draws advance it); a seed gives a
    fresh ``Generator`` on ``PCG64``.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.BitGenerator):
        return np.random.Generator(rng)
    return np.random.Generator(np.random.PCG64(root_seed(rng)))


def spawn(rng: RNGLike, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences of ``root_seed(rng)``."""
    return root_seed(rng).spawn(n)


def seed_record(seq: RNGLike) -> dict[str, Any]:
    """What a result stores so the run can be repeated: entropy and spawn key of its root.

    ``seq`` is the run's root (:func:`root_seed`), or a seed that gives it.
    """
    if not isinstance(seq, np.random.SeedSequence):
        seq = root_seed(seq)
    entropy = seq.entropy
    return {"entropy": int(entropy) if isinstance(entropy, (int, np.integer)) else entropy,
            "spawn_key": tuple(int(k) for k in seq.spawn_key)}
