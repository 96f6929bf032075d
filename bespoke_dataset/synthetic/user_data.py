"""A synthetic input folder for `bespoke build`: the raw user data a team would bring, invented.

`write_user_data` writes `histories.jsonl`, `queries.jsonl` and `judgments.jsonl` from the same generator
as the synthetic releases, with claims either given (`claims.jsonl`) or left to a model (a gold response per
query in `gold_responses.jsonl`, the topic's gold claims written as one paragraph), and rubrics given
(`rubrics.jsonl`) or not. Each query's judged responses are its examples and its held-out responses together.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from bespoke_dataset.atomic import atomic_dir
from bespoke_dataset.source import SYNTHETIC_MARKER
from bespoke_dataset.vocabulary import DIMENSIONS

from .generator import MARKER, SYNTHETIC_RELEASE, synthetic_release


def _jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def write_user_data(out_dir: str | os.PathLike[str], *, users: int = 3, queries_per_user: int = 2, sessions: int = 24,
                    judged_per_query: int = 7, claims: Literal["claims", "gold_responses"] = "claims",
                    rubrics: bool = True, seed: int = 0, force: bool = False) -> Path:
    """Write a synthetic build input folder to `out_dir` (replaced atomically; a non-empty folder that is not
    synthetic is refused unless `force`) and return its path. `claims="gold_responses"` gives a gold response
    per query instead of its claims; `rubrics=False` leaves the rubrics to a model."""
    meta = min(2, judged_per_query - 1)
    release = synthetic_release(users=users, queries_per_user=queries_per_user, sessions=sessions,
                            shots_per_query=judged_per_query - meta, meta_test_per_query=meta, seed=seed)
    with atomic_dir(out_dir, SYNTHETIC_RELEASE, force=force) as tmp:
        _jsonl(tmp / "histories.jsonl", ({"user": s.user, "id": s.id, "source": s.source, "text": s.text,
                                          "timestamp": s.start.isoformat()} for s in release.sessions))
        _jsonl(tmp / "queries.jsonl", ({"user": q.user, "query_id": q.query_id, "query": q.query,
                                        "gold_information_need": q.need} for q in release.queries))
        _jsonl(tmp / "judgments.jsonl", ({"user": q.user, "query_id": q.query_id, "response": r["contents"],
                                          **{dim: r[dim] for dim in DIMENSIONS}}
                                         for q in release.queries for r in q.shots + q.meta_test))
        if claims == "claims":
            _jsonl(tmp / "claims.jsonl", ({"user": q.user, "query_id": q.query_id, "claims": list(q.topic.claims)}
                                          for q in release.queries))
        else:
            _jsonl(tmp / "gold_responses.jsonl", ({"user": q.user, "query_id": q.query_id,
                                                   "response": " ".join(q.topic.claims)} for q in release.queries))
        if rubrics:
            _jsonl(tmp / "rubrics.jsonl", ({"user": q.user, "query_id": q.query_id, "rubric": q.rubric}
                                           for q in release.queries))
        (tmp / SYNTHETIC_MARKER).write_text(f"# {MARKER}\n\nA synthetic input folder for `bespoke build`, written by "
                                            "`bespoke_dataset.synthetic.write_user_data`: invented users and "
                                            "judgments.\n", encoding="utf-8")
    return Path(out_dir)
