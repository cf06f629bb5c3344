"""Real-shaped and bad input files through the verbs that read votes, judgements and batches.

Each test is a file a user could have: an empty or binary votes file, a vote
of a system against itself, batches labelled by text.  Before, these ended
in a pandas traceback, named a 0-based row, or replayed the looks of a
sequential study in the wrong order without a word.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nlpower._inputs import decoding_hint

ELF = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00>\x00\x01\x00\x00\x00`\x10" + bytes(300)


def _votes(n: int = 40, seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    systems = np.array(["gpt", "claude", "llama"])
    pairs = np.array([gen.choice(3, 2, replace=False) for _ in range(n)])
    return pd.DataFrame({"model_a": systems[pairs[:, 0]], "model_b": systems[pairs[:, 1]],
                         "winner": gen.choice(["model_a", "model_b", "tie"], n),
                         "rater": gen.choice(["r1", "r2", "r3"], n),
                         "prompt": gen.choice(["p1", "p2", "p3", "p4"], n)})


def test_a_binary_file_is_not_called_utf16():
    assert "binary file" in decoding_hint(ELF)
    assert "UTF-16" in decoding_hint("worker,item\nw1,i1\n".encode("utf-16-le"))
    assert "UTF-16" in decoding_hint("worker,item\nw1,i1\n".encode("utf-16-be"))
