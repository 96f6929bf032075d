"""`load_rows`: a config's rows straight from the raw tables, equal to what `load` gives through `datasets`."""

from __future__ import annotations

import pytest

import bespoke_dataset
from bespoke_dataset.errors import BespokeDataError
from bespoke_dataset.features import CONFIGS
from bespoke_dataset.rows import load_rows


@pytest.mark.parametrize("config", CONFIGS)
def test_rows_equal_the_datasets_rows_in_the_hub_layout(config, synthetic_hub):
    rows = load_rows(config, synthetic_hub)
    assert rows  # an empty config would make the comparison below vacuous
    assert rows == list(bespoke_dataset.load(config, source=synthetic_hub))


def test_benchmark_rows_equal_the_datasets_rows_in_the_github_layout(synthetic_github):
    rows = load_rows("benchmark", synthetic_github)
    assert len(rows) == 20
    assert rows == list(bespoke_dataset.load("benchmark", source=synthetic_github))


def test_benchmark_rows_of_the_bundled_sample():
    assert load_rows("benchmark", "sample") == list(bespoke_dataset.load("benchmark", source="sample"))


def test_a_config_the_source_cannot_give_is_refused(synthetic_github):
    with pytest.raises(ValueError, match="unknown config 'benchmarks'"):
        load_rows("benchmarks", synthetic_github)
    with pytest.raises(BespokeDataError, match="GitHub layout has no histories"):
        load_rows("histories", synthetic_github)
