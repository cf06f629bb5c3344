"""Explicit randomness: every stochastic entry point takes ``rng``.

``rng`` may be anything :func:`numpy.random.default_rng` accepts (``None``,
an int, a :class:`~numpy.random.SeedSequence`, a ``BitGenerator`` or a
``Generator``).  Parallel work gets child streams from
:meth:`~numpy.random.SeedSequence.spawn`, so results never depend on
``n_jobs``, on the backend or on the order in which work is done.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

RNGLike: TypeAlias = "None | int | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator"


def as_generator(rng: Any = None) -> np.random.Generator:
    """Return a ``Generator`` for ``rng`` (a ``Generator`` is returned as is)."""
    if isinstance(rng, np.random.SeedSequence):
        return np.random.Generator(np.random.PCG64(rng))
    return np.random.default_rng(rng)


def as_seed_sequence(rng: Any = None) -> np.random.SeedSequence:
    """Return a ``SeedSequence`` for ``rng``, the root of spawned child streams.

    An int or ``None`` gives a fresh ``SeedSequence`` (``None`` draws OS
    entropy, which is recorded in ``.entropy`` so the run can be repeated).
    A ``Generator`` or ``BitGenerator`` contributes its own seed sequence.
    """
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)):
        return np.random.SeedSequence(None if rng is None else int(rng))
    if isinstance(rng, np.random.Generator):
        rng = rng.bit_generator
    if isinstance(rng, np.random.BitGenerator):
        seq = rng.seed_seq
        if isinstance(seq, np.random.SeedSequence):
            return seq
    raise TypeError(
        f"rng must be None, an int, a SeedSequence, a BitGenerator or a Generator; got {type(rng).__name__}"
    )


def spawn(rng: Any, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child seed sequences of ``rng``."""
    return as_seed_sequence(rng).spawn(n)


def seed_record(rng: Any) -> dict[str, Any]:
    """What to store in a result so the run can be repeated: entropy and spawn key."""
    seq = as_seed_sequence(rng)
    entropy = seq.entropy
    return {"entropy": int(entropy) if isinstance(entropy, (int, np.integer)) else entropy,
            "spawn_key": tuple(int(k) for k in seq.spawn_key)}
