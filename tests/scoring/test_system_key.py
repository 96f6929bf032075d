"""The system model's key (`bespoke run --model-api-key`) is sent to its endpoint and written nowhere:
not in the generation cache `NAME.cache.sqlite` (nor its `-wal`/`-shm`), the run file `NAME.run.json`,
the predictions, the results file or the judge's cache, after a real HTTP run against two local servers."""

from __future__ import annotations

import json

import pytest
from key_scan import stored_bytes

from bespoke_cli.cli import main
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import serve

SYSTEM_KEY = "sk-system-model-DO-NOT-STORE-42"
JUDGE_KEY = "sk-judge-DO-NOT-STORE-43"
ANSWER = ("Start with the two or three habits that matter most for you, try them for a week, and keep notes on "
          "what changed so the next step builds on what worked.")


@pytest.mark.slow
def test_the_system_models_key_never_lands_on_disk(openai_server, synthetic_hub, tmp_path, capsys):
    openai_server.responder = lambda body: ANSWER  # the system under test
    output = tmp_path / "results.json"
    with serve(responder=judge_answer) as judge:
        code = main(["run", "--model", "openai:system-model", "--model-base-url", openai_server.base_url,
                     "--model-api-key", SYSTEM_KEY, "--context", "none", "--limit", "3", "--source", str(synthetic_hub),
                     "--judge", "openai:judge", "--base-url", judge.base_url, "--api-key", JUDGE_KEY,
                     "--cache", str(tmp_path / "judge.sqlite"), "--output", str(output)])
        judge_calls = len(judge.calls)
    printed = capsys.readouterr()
    assert code == 0, printed.err
    # both keys were really sent, each to its own endpoint: the scan below means something
    headers = [{n.lower(): v for n, v in call.headers.items()} for call in openai_server.calls]
    assert len(headers) == 3 and all(h["authorization"] == f"Bearer {SYSTEM_KEY}" for h in headers)
    assert judge_calls > 0
    results = json.loads(output.read_text())
    assert results["summary"]["items"] == 3
    companions = tmp_path / "results"  # `run --output results.json` keeps its companion files in results/
    assert {"results.json", "judge.sqlite"} <= {p.name for p in tmp_path.iterdir()}
    assert {"predictions.jsonl", "predictions.run.json", "predictions.cache.sqlite"} <= {p.name for p in companions.iterdir()}
    stored = stored_bytes(companions / "predictions.cache.sqlite", companions / "predictions.run.json",
                          tmp_path)  # the named files with their side files, then everything the run wrote
    for key in (SYSTEM_KEY, JUDGE_KEY):
        assert key.encode() not in stored
        assert key not in printed.out + printed.err
    assert json.loads((companions / "predictions.run.json").read_text())["model"]["spec"] == "openai:system-model"
