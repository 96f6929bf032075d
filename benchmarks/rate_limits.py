"""Judging at a provider's limits: `bespoke score` as a user runs it, against a local OpenAI-compatible server that
enforces a limit as OpenAI documents it (`bespoke_metric.testing.provider_limits`: `x-ratelimit-*` headers, 429
`rate_limit_exceeded` with `retry-after-ms`, a refused call counted against the limit, a call charged its prompt
plus its output cap, a per-minute limit enforced per second), beside inspect_ai's adaptive connections making the
same calls against the same limit.

The data: the first `--queries` items of the full-size synthetic release (the real release's 150 queries), each
judged with per-claim recall (one personalization call and one call per gold claim: the synthetic release holds
4 claims a query, so 60 items are 300 calls). The server answers as the stand-in judge after a latency drawn per
call from a lognormal (median `--latency`, `--sigma`). The cases, each with a cold answer cache:

- `unlimited`: the same command against the same server without limits: the fixed cost of a run (start-up, data,
  the calls' latency at this concurrency, results file), measured in the same run;
- `requests`: RPM 1800, enforced as 30 requests a second;
- `tokens`: TPM 1.8M, enforced as 30,000 tokens a second (every call asks an output cap of 2,048: the tokens bind);
- `quota`: an account spent after 100 calls (429 `insufficient_quota`), then topped up and the same command run
  again on the same cache: what the rerun paid for.

Per case: the wall, the limit's bound (the calls or the tokens the run needed, over the rate), wall / bound, (wall -
the unlimited run's) / bound (the issue's goal: at most 1.2), the refused calls and their share of the calls the
server saw, the items left unscored, the exit status. inspect runs `inspect_calls.py` (one sample per call, the
same prompts and caps; its connections adaptive, as by default: no `--max-connections`) unlimited and in the two
rate cases. `--revision REV` runs `bespoke` from that commit of this repository (exported with `git archive`)
instead of the installed package: the figures of a commit before a change, on the same machine. Writes
`benchmarks/results/rate_limits.json` (`--out NAME`: NAME.json).

    python benchmarks/rate_limits.py [--queries 60] [--concurrency 32] [--latency 0.3] [--revision HEAD] [--no-inspect]
    python benchmarks/rate_limits.py --revision 5f59be0 --no-inspect --out rate_limits_before   # before the pacer
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from record import RESULTS, over_runs, write_results  # first: it notes the load the run starts under

from bespoke_metric.testing.provider_limits import Limits, Meter, charge_of
from bespoke_metric.testing.server import TestServer

API_KEY = "sk-benchmark"
HERE = Path(__file__).resolve().parent
CASES: dict[str, Limits | None] = {
    "unlimited": None,
    "requests": Limits(rpm=1800),
    "tokens": Limits(tpm=1_800_000),
}
"""The rate cases (and the run without limits they are measured against)."""
QUOTA_CALLS = 100
RUN_TIMEOUT_S = 3600


@dataclass
class Run:
    """One command's run, as the server and its results file saw it."""

    wall_s: float
    span_s: float
    """From the first call's arrival to the last one's answer, at the server: the calls alone, no start-up."""
    exit_status: int
    seen: int
    """Calls the server received (refused ones included)."""
    refused: int
    answered: int
    unscored: int
    """Items the run left without a figure (all of them when it wrote no results file)."""
    tail: str
    """The command's last lines (what a user saw last)."""
    cache: Path | None = None
    """Its answers' cache."""

    def figures(self) -> dict[str, Any]:
        return {"wall_s": round(self.wall_s, 2), "span_s": round(self.span_s, 2), "exit_status": self.exit_status,
                "calls_seen": self.seen, "refused": self.refused, "answered": self.answered, "items_unscored": self.unscored}


def lognormal_latency(median: float, sigma: float, seed: int = 0) -> Callable[[], float]:
    """Seconds per call drawn from a lognormal of that median (a tail of slow calls, as APIs have)."""
    draw, lock = random.Random(seed), threading.Lock()

    def latency() -> float:
        with lock:
            return draw.lognormvariate(math.log(median), sigma)

    return latency


def summary(runs: list[Run]) -> dict[str, Any]:
    """A case's runs: each measure over the rounds, the worst exit status."""
    return {"wall_s": over_runs(run.wall_s for run in runs), "span_s": over_runs(run.span_s for run in runs),
            "calls_seen": over_runs(run.seen for run in runs), "refused": over_runs(run.refused for run in runs),
            "refused_share": over_runs(run.refused / max(1, run.seen) for run in runs),
            "items_unscored": over_runs(run.unscored for run in runs), "exit_status": max(run.exit_status for run in runs)}


def metered(limits: Limits | None) -> Meter | None:
    return Meter(limits) if limits is not None else None


def unscored_items(results: Path, items: int) -> int:
    if not results.exists():
        return items
    rows = json.loads(results.read_text(encoding="utf-8"))["items"]
    return sum(1 for row in rows if row.get("errors") or row.get("recall") is None
               or any(score is None for score in (row.get("scores") or {None: None}).values()))


def counted(server: TestServer, start: int) -> tuple[float, int, int, int]:
    """The calls the server saw since `start`: their span (seconds), how many, refused (429), answered (200)."""
    calls = server.calls[start:]
    span = max((call.finished or call.received for call in calls), default=0.0) - min(
        (call.received for call in calls), default=0.0)
    return span, len(calls), sum(call.status == 429 for call in calls), sum(call.status == 200 for call in calls)


def exported(revision: str, folder: Path) -> tuple[Path, str]:
    """The packages of this repository at `revision`, importable from `folder` (`bespoke_cli` is `scripts/`, as
    setup.cfg's package_dir maps it), and the commit's full hash."""
    root = HERE.parent
    commit = subprocess.run(["git", "rev-parse", revision], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit, "bespoke_dataset", "bespoke_metric", "scripts"], cwd=root,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "bespoke_cli").symlink_to("scripts")
    return folder, commit


class Bench:
    """The server, the data and the commands of one benchmark run."""

    def __init__(self, args: argparse.Namespace, work: Path, code: Path | None) -> None:
        from bespoke_dataset.rows import load_rows
        from bespoke_dataset.synthetic import write_release
        from bespoke_metric.judging.factory import make_judge
        from bespoke_metric.judging.judge import JudgeItem
        from bespoke_metric.systems.tokens import seed_tiktoken_cache
        from bespoke_metric.testing.judge_responder import judge_answer

        self.args, self.work = args, work
        self.release = write_release(work / "release")
        rows = load_rows("benchmark", self.release)[: args.queries]
        self.items = len(rows)
        responses = [row["shots"][len(row["shots"]) // 2]["response"] for row in rows]
        self.predictions = work / "preds.jsonl"
        self.predictions.write_text("".join(
            json.dumps({"user": r["user"], "query_id": r["query_id"], "response": text}) + "\n"
            for r, text in zip(rows, responses, strict=True)), encoding="utf-8")
        self.server = TestServer(judge_answer, latency=lognormal_latency(args.latency, args.sigma)).start()
        # the calls `bespoke score` makes, as the server charges them: the limits' bounds, and inspect's samples
        judge = make_judge(args.judge, base_url=self.server.base_url, api_key=API_KEY)
        requests, _ = judge.requests([JudgeItem(row, text) for row, text in zip(rows, responses, strict=True)])
        self.calls = len(requests)
        self.tokens = sum(charge_of("openai", json.loads(body) if isinstance(body, (str, bytes)) else body).cost("tokens")
                          for _, body in map(judge.backend.path_and_body, requests))
        self.inspect_calls = work / "calls.jsonl"
        self.inspect_calls.write_text("".join(json.dumps({"messages": list(r.messages), "max_tokens": r.max_tokens}) + "\n"
                                              for r in requests), encoding="utf-8")
        self.env = {**os.environ, "BESPOKE_CACHE": str(work / "bespoke-cache"), "PYTHONPYCACHEPREFIX": str(work / "bytecode"),
                    "NO_COLOR": "1", "TIKTOKEN_CACHE_DIR": str(seed_tiktoken_cache(work / "tiktoken").parent)}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        if code is not None:
            self.env["PYTHONPATH"] = str(code)
        self._runs = 0

    def bound_s(self, limits: Limits) -> float:
        """What the run cannot beat under `limits`: the calls (or their tokens) over the limit's rate."""
        if limits.rpm is not None:
            return self.calls / (limits.rpm / 60)
        assert limits.tpm is not None
        return self.tokens / (limits.tpm / 60)

    def score(self, meter: Meter | None, cache: Path | None = None) -> Run:
        """`bespoke score` as a fresh process against the server metered by `meter` (a cold answer cache unless
        given)."""
        self._runs += 1
        cache = cache or self.work / f"answers-{self._runs}.sqlite"
        output = self.work / f"results-{self._runs}.json"
        self.server.meter = meter
        start = len(self.server.calls)
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "bespoke_cli.cli", "score", "--predictions", str(self.predictions), "--source",
             str(self.release), "--judge", self.args.judge, "--base-url", self.server.base_url, "--api-key", API_KEY,
             "--concurrency", str(self.args.concurrency), "--cache", str(cache), "--output", str(output)],
            env=self.env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=self.work)  # not the checkout:
        # `python -m` puts the working folder first on the path, ahead of an exported revision
        wall = time.perf_counter() - began
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        span, seen, refused, answered = counted(self.server, start)
        return Run(wall, span, done.returncode, seen, refused, answered, unscored_items(output, self.items), tail, cache)

    def inspect(self, meter: Meter | None) -> Run:
        """inspect_ai making the same calls (`inspect_calls.py`), its connections adaptive (the default)."""
        self._runs += 1
        logs = self.work / f"inspect-{self._runs}"
        self.server.meter = meter
        start = len(self.server.calls)
        env = {**self.env, "BENCH_BASE_URL": self.server.base_url, "BENCH_API_KEY": API_KEY}
        env.pop("PYTHONPATH", None)
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "inspect_ai", "eval", f"{HERE / 'inspect_calls.py'}@calls", "-T",
             f"requests={self.inspect_calls}", "--model", f"openai-api/bench/{self.args.judge.split(':', 1)[1]}",
             "--log-dir", str(logs), "--log-format", "json", "--display", "plain", "--no-fail-on-error",
             "--log-level", "warning"], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=self.work)
        wall = time.perf_counter() - began
        failed = self.calls
        for log in logs.glob("*.json"):
            samples = json.loads(log.read_text(encoding="utf-8")).get("samples") or []
            failed = self.calls - sum(1 for sample in samples if not sample.get("error"))
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        span, seen, refused, answered = counted(self.server, start)
        return Run(wall, span, done.returncode, seen, refused, answered, failed, tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=60, help="items judged (the first N queries of the release)")
    parser.add_argument("--judge", default="openai:gpt-4.1", help="the judge spec (its calls ask an output cap)")
    parser.add_argument("--concurrency", type=int, default=32, help="calls in flight (OpenAI's default)")
    parser.add_argument("--latency", type=float, default=0.3, help="median seconds per call")
    parser.add_argument("--sigma", type=float, default=0.5, help="the latency's lognormal sigma (its tail)")
    parser.add_argument("--revision", help="run bespoke from this commit of the repository, not the installed package")
    parser.add_argument("--no-inspect", action="store_true", help="leave inspect_ai's runs out")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the rate cases, alternated")
    parser.add_argument("--out", default="rate_limits", help="the results file's name in benchmarks/results/ "
                                                             "(rate_limits_before: a revision before a change)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bespoke-rate-limits-"))
    code, commit = exported(args.revision, work / "code") if args.revision else (None, None)
    bench = Bench(args, work, code)
    print(f"items: {bench.items}  calls: {bench.calls}  tokens charged: {bench.tokens:,}  latency: median "
          f"{args.latency} s, sigma {args.sigma}  concurrency: {args.concurrency}  bespoke: {commit or 'installed'}  "
          f"rounds: {args.repeats}")
    runs: dict[str, list[Run]] = {name: [] for name in CASES}
    inspect: dict[str, list[Run]] = {name: [] for name in CASES} if not args.no_inspect else {}
    try:
        bench.score(None)  # untimed: compiles the bytecode, looks the day's prices up, as a user's first run
        if inspect:
            bench.inspect(None)  # untimed, likewise
        for _ in range(args.repeats):  # alternated: the machine's load falls on every case alike
            for name, limits in CASES.items():
                runs[name].append(bench.score(metered(limits)))
                if inspect:
                    inspect[name].append(bench.inspect(metered(limits)))
        account = Meter(Limits(quota_calls=QUOTA_CALLS))
        spent = bench.score(account)
        account.top_up(calls=bench.calls)  # enough for the whole run: what the rerun pays for is its own
        rerun = bench.score(account, spent.cache)
    finally:
        bench.server.stop()

    figures: dict[str, Any] = {"items": bench.items, "calls": bench.calls, "tokens_charged": bench.tokens,
                               "latency_median_s": args.latency, "latency_sigma": args.sigma, "rounds": args.repeats,
                               "concurrency": args.concurrency, "judge": args.judge, "bespoke_revision": commit or "installed",
                               "unlimited": summary(runs["unlimited"])}
    print(f"unlimited: wall {figures['unlimited']['wall_s']['median']:.1f} s (calls' span "
          f"{figures['unlimited']['span_s']['median']:.1f} s)")
    if inspect:
        figures["inspect_unlimited"] = summary(inspect["unlimited"])
        print(f"  inspect_ai unlimited: wall {figures['inspect_unlimited']['wall_s']['median']:.1f} s (span "
              f"{figures['inspect_unlimited']['span_s']['median']:.1f} s)")
    for name in ("requests", "tokens"):
        limits = CASES[name]
        assert limits is not None
        bound = bench.bound_s(limits)
        pairs = list(zip(runs[name], runs["unlimited"], strict=True))
        case = {**summary(runs[name]), "bound_s": round(bound, 2),
                "over_bound_past_fixed": over_runs((run.wall_s - fixed.wall_s) / bound for run, fixed in pairs),
                "span_over_bound": over_runs(run.span_s / bound for run in runs[name])}
        line = (f"{name}: bound {bound:.1f} s ({'calls' if name == 'requests' else 'tokens'} / rate); wall "
                f"{case['wall_s']['median']:.1f} s, (wall - unlimited)/bound {case['over_bound_past_fixed']['median']:.2f}, "
                f"span/bound {case['span_over_bound']['median']:.2f}; refused {case['refused']['median']:.0f} of "
                f"{case['calls_seen']['median']:.0f}, items unscored {case['items_unscored']['max']:.0f} at most, exit "
                f"{case['exit_status']}")
        if inspect:
            case["inspect"] = {**summary(inspect[name]), "span_over_bound": over_runs(run.span_s / bound for run in inspect[name])}
            case["bespoke_over_inspect_span"] = over_runs(ours.span_s / theirs.span_s
                                                          for ours, theirs in zip(runs[name], inspect[name], strict=True))
            line += (f"\n  inspect_ai: wall {case['inspect']['wall_s']['median']:.1f} s, span/bound "
                     f"{case['inspect']['span_over_bound']['median']:.2f}, refused {case['inspect']['refused']['median']:.0f}, "
                     f"calls failed {case['inspect']['items_unscored']['max']:.0f} at most, exit {case['inspect']['exit_status']}; "
                     f"bespoke/inspect, the calls' span: {case['bespoke_over_inspect_span']['median']:.2f}")
        figures[name] = case
        print(line)
    paid_twice = spent.answered + rerun.answered - bench.calls
    figures["quota"] = {**spent.figures(), "quota_calls": QUOTA_CALLS,
                        "last_line": spent.tail.splitlines()[-1].replace(str(work), "WORK") if spent.tail else "",
                        "rerun": {**rerun.figures(), "paid_calls": rerun.answered}, "paid_twice": paid_twice}
    print(f"quota ({QUOTA_CALLS} calls): wall {spent.wall_s:.1f} s, exit {spent.exit_status}, {spent.answered} answered, "
          f"{spent.refused} refused, {spent.unscored} items unscored; last lines:\n    "
          + spent.tail.replace("\n", "\n    ")
          + f"\n  after a top-up, the rerun paid {rerun.answered} calls (wall {rerun.wall_s:.1f} s, exit "
          f"{rerun.exit_status}, {rerun.unscored} unscored): {paid_twice} of the {spent.answered} answered before "
          "were paid twice")
    write_results(__file__, figures, out=RESULTS / f"{args.out}.json", goals={
        "requests.items_unscored.max": ("<=", 0), "tokens.items_unscored.max": ("<=", 0),
        "requests.over_bound_past_fixed.median": ("<=", 1.2), "tokens.over_bound_past_fixed.median": ("<=", 1.2),
        "requests.refused_share.median": ("<=", 0.1), "tokens.refused_share.median": ("<=", 0.1),
        **({f"{name}.bespoke_over_inspect_span.median": ("<", 1.0) for name in ("requests", "tokens")} if inspect else {}),
        "quota.wall_s": ("<", 30.0), "quota.exit_status": (">", 0),
        "quota.paid_twice": ("<=", 0), "quota.rerun.items_unscored": ("<=", 0)},
        notes={"over_bound_past_fixed": "(wall - the unlimited run's wall) / bound: the issue's goal, wall within 1.2x the "
                                        "bound plus a warm run's fixed cost",
               "bound_s": "calls / (RPM/60), or tokens charged (prompt words + output cap) / (TPM/60)",
               "span_s": "from the first call's arrival at the server to the last call's answer: the calls alone",
               "refused_share": "429s over every call the server received in the run",
               "quota.rerun.paid_calls": "calls the rerun after the top-up was answered (and charged)",
               "quota.paid_twice": "answered (charged) calls of the spent run that the rerun paid for again: answers "
                                   "the first run did not keep",
               "inspect": "inspect_ai making the same calls (benchmarks/inspect_calls.py), one sample per call, adaptive "
                          "connections as by default; items_unscored there: calls (samples) that ended in an error",
               "bespoke_over_inspect_span": "bespoke's calls' span / inspect's on the same limit: start-ups left out"})


if __name__ == "__main__":
    main()
