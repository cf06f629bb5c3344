"""Table 3 of Card et al. (2020): (P0, b0) fitted to four WMT En-De comparisons.

Each row is a pair of FAIRSEQ models evaluated with sacrebleu on a WMT
shared-task test set; ``P0`` is the share of sentences whose swap changes
nothing and ``b0 = b n`` the Laplace scale times the test-set size.  The
paper's Figure 4 uses the average of the four rows (P0 = 0.125, b0 = 25.8;
Figure 17's caption rounds P0 to 0.13).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._choices import BleuPreset, check_choice

__all__ = ["TABLE3", "BleuParams", "preset"]


@dataclass(frozen=True)
class BleuParams:
    """Delta–Laplace parameters of one MT comparison (a Table 3 row or their average).

    ``n`` is the test-set size and ``delta_bleu`` the reported BLEU difference
    (both None for the average).
    """

    name: str
    p0: float
    b0: float
    n: int | None = None
    delta_bleu: float | None = None
    systems: str = ""
    test_set: str = ""


#: The four rows of Table 3 (M1 vs M2, WMT test set, n, dB, P0, b0).
TABLE3: dict[str, BleuParams] = {
    "TF19-TF18": BleuParams("TF19-TF18", 0.19, 23.7, 2000, 4.3, "TF19* vs TF18* (ensembles)", "WMT19"),
    "TF18-TF16": BleuParams("TF18-TF16", 0.09, 29.4, 3000, 4.2, "TF18 vs TF16", "WMT18"),
    "TF16-Conv17": BleuParams("TF16-Conv17", 0.12, 22.5, 3000, 1.3, "TF16 vs Conv17", "WMT17"),
    "TF16-Conv14": BleuParams("TF16-Conv14", 0.10, 27.6, 3000, 7.6, "TF16 vs Conv14", "WMT16"),
}


def preset(name: BleuPreset = "average") -> BleuParams:
    """A Table 3 row by name, or ``"average"`` (the mean P0 and b0 of the four rows, Figure 4).

    Examples
    --------
    >>> p = preset("average")
    >>> round(p.p0, 3), round(p.b0, 2)
    (0.125, 25.8)
    """
    check_choice("preset", name, BleuPreset)
    if name == "average":
        rows = list(TABLE3.values())
        return BleuParams("average", sum(r.p0 for r in rows) / len(rows),
                          sum(r.b0 for r in rows) / len(rows),
                          systems="mean of the four Table 3 rows")
    return TABLE3[name]
