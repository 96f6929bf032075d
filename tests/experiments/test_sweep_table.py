"""The sweep's pure parts: the grid and its names, the pairing of each row with its `none` row, the
relative drop on a `search_noise` axis (on synthetic cell figures), the table's files, the config words."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

from bespoke_metric.analysis.leaderboard import compare, parse_results, system_row
from bespoke_metric.experiments import Axis, Cell, SweepConfig, baselines, build_table, cells, relative_drops
from bespoke_metric.experiments.grid import NOISE
from bespoke_metric.experiments.table import to_csv, to_markdown


def grid(*axes: Axis) -> list[Cell]:
    return cells(list(axes))


MODELS = Axis("model", "--models", ("openai:gpt-4o", "perplexity:sonar-reasoning"))
CONTEXTS = Axis("context", "--contexts", ("none", "selected-profile"))
NOISE_AXIS = Axis(NOISE, "--search-noise", (0.0, 0.7))


def test_the_grid_is_the_product_of_its_axes_model_outermost_and_named_for_files():
    made = grid(MODELS, CONTEXTS, Axis("top_k", "--top-k", (3, 5)))
    assert [cell.values for cell in made[:3]] == [
        {"model": "openai:gpt-4o", "context": "none", "top_k": 3},
        {"model": "openai:gpt-4o", "context": "none", "top_k": 5},
        {"model": "openai:gpt-4o", "context": "selected-profile", "top_k": 3}]
    assert len(made) == 8
    assert made[-1].name == "perplexity-sonar-reasoning__selected-profile__top-k-5"
    # an axis of one value is left out of the names
    assert [cell.name for cell in grid(Axis("model", "--models", ("hf:Qwen/Qwen3-8B",)), CONTEXTS, Axis("budget", "--budget", (2048,)))] == [
        "hf-Qwen--Qwen3-8B__none", "hf-Qwen--Qwen3-8B__selected-profile"]


def test_models_in_folders_of_the_same_name_keep_apart():
    names = [cell.name for cell in grid(Axis("model", "--models", ("hf:/a/tiny", "hf:/b/tiny", "hf:/c/other/")), Axis("context", "--contexts", ("none",)))]
    assert names[2] == "hf-other__none"
    assert names[0].startswith("hf-tiny-") and names[1].startswith("hf-tiny-") and names[0] != names[1]
    assert len(set(names)) == 3


def test_an_axis_naming_a_value_twice_is_refused():
    with pytest.raises(ValueError, match="--contexts names none more than once"):
        Axis("context", "--contexts", ("none", "oracle", "none"))


def test_each_cell_pairs_with_the_same_system_at_the_baseline():
    made = grid(MODELS, CONTEXTS, NOISE_AXIS)
    by_values = {tuple(cell.values.values()): cell.name for cell in made}
    pairs = baselines(made, "context", "none")
    assert len(pairs) == 4  # the selected-profile cells; none cells are baselines themselves
    for name, base in pairs.items():
        cell = next(c for c in made if c.name == name)
        assert base == by_values[(cell.values["model"], "none", cell.values[NOISE])]


def test_the_noise_drop_is_relative_to_the_same_system_at_the_lowest_noise():
    made = grid(MODELS, CONTEXTS, NOISE_AXIS)
    averages = dict(zip((cell.name for cell in made), [55.0, 44.0, 60.0, 45.0, 62.5, 48.04375, 0.0, 10.0], strict=True))
    drops = relative_drops(made, averages)
    assert set(drops) == {cell.name for cell in made if cell.values[NOISE] == 0.7}
    assert drops[made[1].name] == pytest.approx(-20.0)
    assert drops[made[3].name] == pytest.approx(-25.0)
    assert drops[made[5].name] == pytest.approx(-23.13, abs=1e-9)  # the paper's sonar-reasoning at 70% noise
    assert drops[made[7].name] is None  # a baseline of 0 has no relative change
    assert relative_drops(made, {**averages, made[4].name: None})[made[5].name] is None
    assert relative_drops(grid(MODELS, CONTEXTS), averages) == {}  # no noise axis, no drop


@pytest.fixture
def sweep_entries(make_results):
    """Results of a 2 models x 2 contexts grid (10 queries each); the personalised cells are better."""
    rng = np.random.default_rng(3)
    made = grid(MODELS, CONTEXTS)
    entries = {}
    for index, cell in enumerate(made):
        shift = 1 if cell.values["context"] != "none" else 0
        scores = np.clip(rng.integers(1, 4, size=(10, 4)) + shift, 1, 5)
        values = np.column_stack([scores, rng.random(10)]).astype(object)
        if index == 3:
            values[0, 1] = None  # one failed judgment
        entries[cell.name] = parse_results(make_results(values, system=cell.name), f"{cell.name}.json")
    return made, entries


def test_the_table_carries_each_cells_intervals_and_its_paired_test_against_none(sweep_entries):
    made, entries = sweep_entries
    rows = build_table(made, entries, dict.fromkeys(entries, "done"))
    assert [row.cell for row in rows] == made
    for row in rows:
        reference = system_row(entries[row.cell.name])
        assert row.values == reference.values and row.cis == reference.cis
    assert rows[0].versus_none is None and rows[2].versus_none is None
    assert rows[1].versus_none == compare(entries[made[1].name], entries[made[0].name])["metrics"]
    assert rows[3].versus_none == compare(entries[made[3].name], entries[made[2].name])["metrics"]
    assert rows[3].failures == 1

    table = list(csv.DictReader(io.StringIO(to_csv(rows, [MODELS, CONTEXTS]))))
    assert [line["cell"] for line in table] == [cell.name for cell in made]
    assert float(table[1]["average_vs_none"]) == pytest.approx(rows[1].versus_none["average"]["difference"], abs=1e-4)
    assert float(table[1]["average_vs_none_p"]) == pytest.approx(rows[1].versus_none["average"]["p_value"], abs=1e-4)
    assert table[0]["average_vs_none"] == "" and table[0]["noise_drop_percent"] == ""
    markdown = to_markdown(rows, [MODELS, CONTEXTS])
    header = markdown.splitlines()[0]
    assert header.startswith("| System | Context | Need Alignment | Content Depth | Tone | Style | Recall | Average | Δ Average vs none (p) |")
    assert "Noise drop" not in header
    difference = rows[1].versus_none["average"]
    assert f"{difference['difference']:+.2f} (p={difference['p_value']:.3g})" in markdown.splitlines()[3]


def test_a_cell_without_results_keeps_its_row_with_its_status(sweep_entries):
    made, entries = sweep_entries
    del entries[made[2].name]  # its system's none row is gone too: no paired difference for the next row
    rows = build_table(made, entries, {**dict.fromkeys(entries, "done"), made[2].name: "failed"})
    assert rows[2].status == "failed" and rows[2].values["average"] is None
    assert rows[3].versus_none is None
    table = list(csv.DictReader(io.StringIO(to_csv(rows, [MODELS, CONTEXTS]))))
    assert (table[2]["status"], table[2]["average"], table[2]["items"]) == ("failed", "", "0")


def test_a_config_file_is_read_into_the_settings_of_a_sweep_by_key(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("models: [openai:a, openai:b]\ntop-k: [3, 5]\nno-guards: true\nstrict: false\njudge: openai:j\nout: x\n",
                    encoding="utf-8")
    config = SweepConfig.from_yaml(path)
    assert (config.models, config.settings, config.judge.guards, config.strict) == (("openai:a", "openai:b"), {"top_k": [3, 5]}, False, False)
    for text, message in [("models: {a: 1}\njudge: j\nout: x\n", "model takes a value or a list of values"),
                          ("- models\n", "a config is a mapping of setting names to values, got list"),
                          ("models: [a\n", "not valid YAML (line 2: "),
                          ("modles: x\n", "unknown key 'modles' (did you mean model?)")]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError,
                           match="^" + re.escape(f"{path}: {message}")):
            SweepConfig.from_yaml(path)
    with pytest.raises(ValueError, match="cannot read the config"):
        SweepConfig.from_yaml(tmp_path / "missing.yaml")


def test_a_noise_axis_adds_the_drop_column(sweep_entries):
    made, entries = sweep_entries
    values = [("none", 0.0), ("none", 0.7), ("selected-profile", 0.0), ("selected-profile", 0.7)]
    noisy = [Cell(cell.name, {"model": "openai:gpt-4o", "context": context, NOISE: noise})
             for cell, (context, noise) in zip(made, values, strict=True)]
    rows = build_table(noisy, entries, dict.fromkeys(entries, "done"))
    average = [row.values["average"] for row in rows]
    assert [row.noise_drop for row in rows] == [None, pytest.approx(100 * (average[1] - average[0]) / average[0]),
                                                None, pytest.approx(100 * (average[3] - average[2]) / average[2])]
    assert rows[3].versus_none == compare(entries[made[3].name], entries[made[1].name])["metrics"]  # none at the same noise
    axes = [Axis("model", "--models", ("openai:gpt-4o",)), CONTEXTS, NOISE_AXIS]
    markdown = to_markdown(rows, axes).splitlines()
    assert markdown[0].split(" | ")[2:3] == ["search-noise"] and "| Noise drop |" in markdown[0]
    assert f"| {rows[3].noise_drop:+.2f}% |" in markdown[5]
    assert "Noise drop: relative change of the average from the same system at the lowest search_noise." in markdown
