"""fit_ratings(family="ordinal") and `nlpower fit --family ordinal`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import FIXTURES
from nlpower.errors import RatingsError
from nlpower.ordinal.ratings import OrdinalRatingsFit
from nlpower.ratings import fit_ratings, read_ratings


@pytest.fixture(scope="module")
def pilot():  # type: ignore[no-untyped-def]
    return read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))


@pytest.fixture(scope="module")
def ofit(pilot) -> OrdinalRatingsFit:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a singular fit is reported, not warned
        return fit_ratings(pilot, family="ordinal",
                           model="rating ~ system + (1 | worker) + (1 | item)")


def test_tables_layout(ofit: OrdinalRatingsFit) -> None:
    t = ofit.tables()
    assert list(t) == ["Table 13", "Table 14", "Table 15"]
    assert list(t["Table 13"].columns) == ["beta1", "theta[1|2]", "theta[2|3]", "theta[3|4]",
                                           "theta[4|5]", "sigma (latent)"]
    assert t["Table 13"]["sigma (latent)"].iloc[0] == pytest.approx(np.pi / np.sqrt(3))
    assert list(t["Table 14"].columns) == ["sigma0w", "sigma1w", "sigma2w"]
    assert t["Table 14"]["sigma1w"].iloc[0] == 0.0        # no per-system worker term
    assert t["Table 15"]["sigma0i"].iloc[0] == pytest.approx(
        ofit.fit.varcorr().set_index("grp").loc["item", "sdcor"])
    text = ofit.summary()
    assert "Table 13 layout" in text and "Threshold coefficients:" in text
    assert ofit.to_dict()["family"] == "ordinal"


def test_same_direction_as_gaussian(pilot, ofit) -> None:  # type: ignore[no-untyped-def]
    g = fit_ratings(pilot, model="rating ~ system + (1 | worker) + (1 | item)")
    # sum coding, fitted order (B, A): both say the same about system B vs A
    assert np.sign(g.fixef.iloc[1]) == np.sign(ofit.fixef.iloc[0])


def test_paper_model_per_system_sds(pilot) -> None:  # type: ignore[no-untyped-def]
    f = fit_ratings(pilot, family="ordinal")
    sd = f.tables()["Table 15"]
    assert (sd.to_numpy() >= 0).all() and sd[["sigma1i", "sigma2i"]].to_numpy().max() > 0.3
    assert f.fit.converged


def test_bad_family(pilot) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RatingsError, match="family must be"):
        fit_ratings(pilot, family="poisson")


def test_cli_family_ordinal(capsys: pytest.CaptureFixture[str]) -> None:
    from nlpower.cli import main
    rc = main(["fit", str(FIXTURES / "pilot_ratings.csv"), "--scale", "1", "5", "--family",
               "ordinal", "--model", "rating ~ system + (1|worker) + (1|item)"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "cumulative logit mixed model" in out and "theta[1|2]" in out


def test_link_probit(pilot, ofit) -> None:  # type: ignore[no-untyped-def]
    # the link reaches the fit: a probit fit is a different likelihood with a unit latent SD
    f = fit_ratings(pilot, family="ordinal", link="probit",
                    model="rating ~ system + (1 | worker) + (1 | item)")
    assert f.fit.model.link.name == "probit" and f.to_dict()["link"] == "probit"
    assert f.tables()["Table 13"]["sigma (latent)"].iloc[0] == pytest.approx(1.0)
    assert abs(f.fit.loglik - ofit.fit.loglik) > 1e-6
    assert "cumulative probit mixed model" in f.summary()


def test_link_refused_for_gaussian_and_unknown(pilot) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RatingsError, match="link='probit' is for family='ordinal'"):
        fit_ratings(pilot, link="probit")
    with pytest.raises(RatingsError, match="link"):
        fit_ratings(pilot, family="ordinal", link="identity")


def test_cli_link(capsys: pytest.CaptureFixture[str]) -> None:
    from nlpower.cli import main
    args = ["fit", str(FIXTURES / "pilot_ratings.csv"), "--scale", "1", "5",
            "--model", "rating ~ system + (1|worker) + (1|item)"]
    assert main([*args, "--family", "ordinal", "--link", "probit"]) == 0
    assert "cumulative probit mixed model" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*args, "--link", "probit"])           # gaussian: no link to choose
    assert "--link is for --family ordinal or binomial" in capsys.readouterr().err
