"""The claims review: the paper had people filter the claims a model extracted, and so can you.

A build that extracts claims writes `claims_review.jsonl` into the release, one line per claim:
``{"user", "query_id", "number", "claim", "keep": true}``. Set `keep` to false for a claim to drop (or edit
its text), then build again with `--accept FILE`: the release gets only the kept claims, and no claim is
extracted again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..keys import query_key
from .inputs import Key, Problems, known_key, read_jsonl, text_of

REVIEW_FILE = "claims_review.jsonl"


def review_lines(claims: Mapping[Key, list[str]], keep: Mapping[Key, list[bool]] | None = None) -> list[dict[str, Any]]:
    """One review line per claim, queries in the order given; every claim kept unless `keep` says otherwise."""
    return [{"user": user, "query_id": query_id, "number": number, "claim": claim,
             "keep": True if keep is None else keep[user, query_id][number - 1]}
            for (user, query_id), found in claims.items() for number, claim in enumerate(found, 1)]


def review_text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def read_accepted(path: str | Path, queries: Mapping[Key, object],
                  problems: Problems) -> tuple[dict[Key, list[str]], dict[Key, list[bool]]]:
    """Every query's claims in a reviewed file and which are kept (`keep: true`), in file order. Problems: a
    line without a readable `claim` and boolean `keep`, an unknown query, a query of `queries` with no line
    or with none kept."""
    path = Path(path)
    if not path.is_file():
        problems.add(str(path), "no such file (--accept takes the claims_review.jsonl of an earlier build)")
        return {}, {}
    claims: dict[Key, list[str]] = {}
    keep: dict[Key, list[bool]] = {}
    for line in read_jsonl(path, problems):
        key = known_key(line, problems, queries)
        claim, kept = text_of(line, "claim", problems), line.data.get("keep")
        if not isinstance(kept, bool):
            problems.add(line.where, f"'keep' must be true or false, got {kept!r}")
            continue
        if key is None or claim is None:
            continue
        claims.setdefault(key, []).append(claim.strip())
        keep.setdefault(key, []).append(kept)
    for key in queries:
        if key not in claims:
            problems.add(str(path), f"no claims of {query_key(*key)}")
        elif not any(keep[key]):
            problems.add(str(path), f"no claim of {query_key(*key)} is kept")
    return claims, keep
