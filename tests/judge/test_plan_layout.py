"""The judge plan's rows say their layout, apart from the fully crossed plan's."""

from __future__ import annotations

from nlpower import presets
from nlpower.cli import main
from nlpower.judge import JudgeDesign
from nlpower.judge.power import judge_plan, layout


def test_each_row_names_its_layout():
    tab = judge_plan(presets.high_variance(effect=0.1), judge_r=0.8, max_workers=20)
    for _, row in tab.iterrows():
        assert row["layout"] == layout(JudgeDesign(int(row["n_labelled"]),
                                                   int(row["workers_per_item"]),
                                                   int(row["n_unlabelled"]),
                                                   int(row["n_workers"])))
        assert f"{row['workers_per_item']} of {row['n_workers']} workers" in row["layout"] \
            or row["workers_per_item"] == row["n_workers"]


def test_layout_says_crossed_only_when_every_worker_rates_every_item():
    assert layout(JudgeDesign(50, 4, 0, 4)).startswith("every worker rates every item")
    assert layout(JudgeDesign(50, 2, 0, 30)) == "2 of 30 workers per item"


def test_plan_with_a_judge_sets_the_two_human_only_costs_apart(capsys):
    assert main(["plan", "--agreement", "0.6", "--effect", "0.05", "--judge-r", "0.8",
                 "--cost-per-rating", "0.5", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "every worker rates every item" in out  # the crossed plan's summary
    assert "workers per item" in out.split("beside humans only")[1]  # the judge table's rows
    assert "two layouts reaching the same target power" in out
