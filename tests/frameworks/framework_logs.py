"""What our judge leaves in a framework's log, as the tests of `bespoke import` write it: the judge block
(`frameworks.importing.JUDGE_KEY`), the judged item (`ITEM_KEY`), and a sample line of lm-eval's `--log_samples`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bespoke_dataset.keys import parse_query_key
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.frameworks.importing import ITEM_KEY, JUDGE_KEY
from bespoke_metric.judging.guards import GUARDS_VERSION
from bespoke_metric.results import ItemResult
from bespoke_metric.results.metrics import METRIC_NAMES

JUDGE = "openai:judge-model"


def judge_block(answered: int, **fields: Any) -> dict[str, Any]:
    """`JUDGE`'s block, its model having answered `answered` calls; `fields` added or replaced."""
    return {"spec": JUDGE, "engine": "openai", "model": "judge-model", "protocol_version": "2.x", "max_shots": 5,
            "guards": GUARDS_VERSION, "proxy": False, "served_models": {"judge-model": answered}, **fields}


def judged_item(key: str, scores: Sequence[int | None], recall: float | None, **fields: Any) -> ItemResult:
    """The judgment of the answer to query `key`: a dimension scored None failed as unparsable; `fields` (a guard,
    a cut) as the judge sets them."""
    user, query_id = parse_query_key(key)
    marks = dict(zip(DIMENSIONS, scores, strict=True))
    item = ItemResult(user, query_id, scores=marks, recall=recall, **fields)
    item.errors = [{"metric": dim, "reason": "unparsable"} for dim, score in marks.items() if score is None]
    return item


def filter_text(item: ItemResult, block: dict[str, Any]) -> str:
    """What lm-eval's filter of ours (`lm_eval_harness.judge_answers`) makes of an answer: its item and judge block."""
    return json.dumps({ITEM_KEY: item.to_json(), JUDGE_KEY: block}, ensure_ascii=False)


def lm_eval_sample(index: int, key: str, answer: str, filtered: str) -> str:
    """One line of lm-eval's samples file of `bespoke_none` as `--log_samples` writes it: the document of query
    `key`, the model's answer, and our filter's text (`filter_text`, or anything else in its place)."""
    user, query_id = parse_query_key(key)
    doc = {"user": user, "query_id": query_id, "key": key, "context": "none", "source": "sample", "judge": JUDGE}
    return json.dumps({"doc_id": index, "doc": doc, "target": key, "arguments": {}, "resps": [[answer]],
                       "filtered_resps": [filtered], "filter": "bespoke", "metrics": list(METRIC_NAMES)},
                      ensure_ascii=False)
