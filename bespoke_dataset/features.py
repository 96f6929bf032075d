"""Typed `datasets.Features` for each config (what a row of each config holds)."""

from __future__ import annotations

from datasets import Features, List, Value

from .vocabulary import DIMENSIONS


def _judgment() -> dict[str, Features | dict]:
    return {d: {"score": Value("int32"), "feedback": Value("string")} for d in DIMENSIONS}


_KEY = {"user": Value("string"), "query_id": Value("string")}

_JUDGED = Features({**_KEY, "index": Value("int32"), "response": Value("string"), **_judgment()})

FEATURES: dict[str, Features] = {
    "queries": Features({**_KEY, "query": Value("string"), "gold_information_need": Value("string")}),
    "histories": Features({
        "user": Value("string"), "id": Value("string"), "source": Value("string"), "text": Value("string"),
        "timestamp": Value("string"),
        "turns": List({"role": Value("string"), "content": Value("string")}),
        "urls": List(Value("string")),
        "search_queries": List(Value("string")),
    }),
    "rj_pairs": _JUDGED,
    "meta_test": _JUDGED,
    "gold_claims": Features({**_KEY, "claims": List(Value("string"))}),
    "rubrics": Features({**_KEY, "rubric": Value("string")}),
    "benchmark": Features({
        **_KEY, "query": Value("string"), "gold_information_need": Value("string"), "rubric": Value("string"),
        "shots": List({"response": Value("string"), **_judgment()}),
        "claims": List(Value("string")),
        "history_ids": List(Value("string")),
    }),
}

CONFIGS: tuple[str, ...] = tuple(FEATURES)
"""Every config name, in documentation order."""

DESCRIPTIONS: dict[str, str] = {
    "queries": "One row per query: the query text and the gold information need written for it.",
    "histories": "One row per history session (chat or search) with its raw text and parsed structure.",
    "rj_pairs": "One row per human-judged example response (the judge's few-shot examples).",
    "meta_test": "One row per held-out human-judged response, for meta-evaluating a judge.",
    "gold_claims": "One row per query: the gold atomic claims a good response conveys.",
    "rubrics": "One row per query: the personalized rubric.",
    "benchmark": "One row per query: everything the judge and a system under test need.",
}
