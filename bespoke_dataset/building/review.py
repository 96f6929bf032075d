"""The claims review: the paper had people filter the claims a model extracted, and so can you.

A build that extracts claims writes `claims_review.jsonl` into the release, one line per claim:
``{"user", "query_id", "number", "claim", "keep": true}``. Set `keep` to false for a claim to drop (or edit
its text), then build again with `--accept FILE`: the release gets only the kept claims, and no claim is
extracted again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .inputs import Key

REVIEW_FILE = "claims_review.jsonl"


def review_lines(claims: Mapping[Key, list[str]], keep: Mapping[Key, list[bool]] | None = None) -> list[dict[str, Any]]:
    """One review line per claim, queries in the order given; every claim kept unless `keep` says otherwise."""
    return [{"user": user, "query_id": query_id, "number": number, "claim": claim,
             "keep": True if keep is None else keep[user, query_id][number - 1]}
            for (user, query_id), found in claims.items() for number, claim in enumerate(found, 1)]


def review_text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
