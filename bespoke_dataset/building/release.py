"""`build_release`: your users' data in, a release in the public Hub layout out.

The steps: read and check the input folder (`inputs`; any problem stops the build before a model is
asked); split each query's judged responses into examples and held-out meta-test (`split`, seeded per
query); take the rubrics from `rubrics.jsonl` or have the `write_rubrics` author write them from the
examples; take the claims from `claims.jsonl`, from a reviewed file (`accept`), or have the `extract_claims`
author extract them from the gold responses; then write the seven tables, the card (README.md), the
manifest (`build.json`), for extracted claims the review file, and the synthetic marker of a synthetic
input folder, all at once (`atomic_dir`): a build
that fails writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import FolderOwner, atomic_dir, check_folder
from ..errors import UserError
from ..source import SYNTHETIC_MARKER
from ..version import __version__
from .authored import Author, ClaimTask, RubricTask, run_author
from .card import release_card
from .inputs import Inputs, Judged, Key, read_inputs
from .review import REVIEW_FILE, review_lines, review_text
from .tables import Split, table_rows, write_tables

MANIFEST = "build.json"
BUILT_RELEASE = FolderOwner(f"a built release ({MANIFEST})", lambda folder: (folder / MANIFEST).is_file())
"""A folder `build_release` wrote: it may replace it."""
DEFAULT_META_TEST_SHARE = 0.3


@dataclass(frozen=True)
class BuildSummary:
    """What a build wrote: where, and its `build.json`."""

    out: Path
    manifest: dict[str, Any]


def check_share(share: float) -> None:
    """UserError for a meta-test share outside [0, 1)."""
    if not 0 <= share < 1:
        raise UserError(f"--meta-test-share must be at least 0 and below 1, got {share}")


def split(judgments: Mapping[Key, list[Judged]], share: float, seed: int) -> Split:
    """Each query's judged responses into examples and meta-test: `share` of them held out (rounded, at
    least one and at most all but one; none for a share of 0), drawn at random with a generator seeded by
    `seed` and the query, so that adding a query changes no other query's split. Order is kept in both."""
    check_share(share)
    shots: dict[Key, list[dict[str, Any]]] = {}
    meta_test: dict[Key, list[dict[str, Any]]] = {}
    for (user, query_id), judged in judgments.items():
        n = len(judged)
        held = 0 if share == 0 else min(n - 1, max(1, math.floor(share * n + 0.5)))
        chosen = set(random.Random(f"{seed}/{user}/{query_id}").sample(range(n), held))
        shots[user, query_id] = [j.record for i, j in enumerate(judged) if i not in chosen]
        meta_test[user, query_id] = [j.record for i, j in enumerate(judged) if i in chosen]
    return Split(shots, meta_test)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_release(
    from_dir: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    write_rubrics: Author | None = None,
    extract_claims: Author | None = None,
    accept: str | os.PathLike[str] | None = None,
    meta_test_share: float = DEFAULT_META_TEST_SHARE,
    seed: int = 0,
    made_by: Mapping[str, Mapping[str, Any]] | None = None,
    force: bool = False,
) -> BuildSummary:
    """Build a release from the input folder `from_dir` (see `inputs`) into `out`.

    `write_rubrics`: an author of rubrics (else `rubrics.jsonl` must be in the folder); `extract_claims`: an
    author of claims from `gold_responses.jsonl` (else `claims.jsonl` must be there); `accept`: a reviewed
    `claims_review.jsonl`, whose kept claims are used without extracting any. `made_by` names, for the card
    and manifest, what wrote the rubrics and the claims (``{"rubrics": {"model": ..., "prompt_version":
    ...}}``). A non-empty `out` that no build wrote is refused unless `force`.

    Raises BuildInputError (every problem of the input, one line each), or IncompleteBuild when some model
    calls failed; in both cases nothing is written.
    """
    check_folder(out, BUILT_RELEASE, force=force, effect="replace it and everything in it")
    check_share(meta_test_share)
    inputs = read_inputs(from_dir, rubrics_by_model=write_rubrics is not None,
                         claims_by_model=extract_claims is not None, accept=accept)
    halves = split(inputs.judgments, meta_test_share, seed)
    made = {"rubrics": dict((made_by or {}).get("rubrics", {})), "claims": dict((made_by or {}).get("claims", {}))}
    rubrics = _rubrics(inputs, halves, write_rubrics, made["rubrics"])
    claims, review = _claims(inputs, extract_claims, made["claims"])
    keys = inputs.keys
    with atomic_dir(out, BUILT_RELEASE, force=force) as tmp:
        sizes = write_tables(tmp, table_rows(inputs, halves, rubrics, claims))
        manifest = {
            "built_by": f"bespoke-eval {__version__}",
            "inputs": {path.name: _sha256(path) for path in sorted(Path(from_dir).glob("*.jsonl"))},
            "meta_test_share": meta_test_share, "seed": seed, **made,
            "counts": {"users": len({user for user, _ in keys}), "queries": len(keys), "sessions": len(inputs.sessions),
                       "shots": sum(len(v) for v in halves.shots.values()),
                       "meta_test": sum(len(v) for v in halves.meta_test.values()),
                       "claims": sum(len(claims[key]) for key in keys)},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(release_card(manifest, sizes), encoding="utf-8")
        if review is not None:
            (tmp / REVIEW_FILE).write_text(review_text(review), encoding="utf-8")
        marker = Path(from_dir) / SYNTHETIC_MARKER
        if marker.is_file():  # built from invented users: every figure from it says so (results' caveats)
            shutil.copyfile(marker, tmp / SYNTHETIC_MARKER)
    return BuildSummary(Path(out), manifest)


def _rubrics(inputs: Inputs, halves: Split, author: Author | None, made: dict[str, Any]) -> dict[Key, str]:
    if author is None:
        made["from"] = "given in rubrics.jsonl"
        return inputs.rubrics
    made["from"] = "written by a model from each query, its gold need and its judged examples"
    tasks = [RubricTask(user, query_id, inputs.queries[user, query_id].query,
                        inputs.queries[user, query_id].gold_information_need, tuple(halves.shots[user, query_id]))
             for user, query_id in inputs.keys]
    return run_author(author, tasks, "rubrics")


def _claims(inputs: Inputs, author: Author | None,
            made: dict[str, Any]) -> tuple[dict[Key, list[str]], list[dict[str, Any]] | None]:
    """The claims by query, and the review lines to write (None for claims given in claims.jsonl)."""
    if inputs.accepted is not None:
        every, keep = inputs.accepted
        made.update({"from": "extracted from the gold responses and reviewed",
                     "kept": sum(sum(flags) for flags in keep.values()), "reviewed": sum(len(f) for f in keep.values())})
        ordered = {key: every[key] for key in inputs.keys}
        kept = {key: [claim for claim, k in zip(every[key], keep[key], strict=True) if k] for key in inputs.keys}
        return kept, review_lines(ordered, keep)
    if author is None:
        made["from"] = "given in claims.jsonl"
        return inputs.claims, None
    made["from"] = "extracted by a model from the gold responses (review them in claims_review.jsonl)"
    tasks = [ClaimTask(user, query_id, inputs.queries[user, query_id].query, inputs.gold_responses[user, query_id])
             for user, query_id in inputs.keys]
    extracted = run_author(author, tasks, "claim extractions")
    ordered = {key: extracted[key] for key in inputs.keys}
    return ordered, review_lines(ordered)
