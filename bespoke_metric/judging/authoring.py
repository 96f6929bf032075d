"""What `bespoke build` asks a model to write: a rubric per query, the atomic claims of a gold response.

The paper's evaluator writes a query-specific rubric from the query, the user's gold need and the user's
judged responses (scores and feedback), and extracts the atomic claims of a gold response, which people then
filtered. `rubric_request` and `claims_request` build those requests from the templates in `prompts`
(versioned on their own, `AUTHORING_VERSION`: not part of the judging protocol or its cache keys); the
parsers read the answers (a rubric is the answer's text without its reasoning; claims come as a JSON list
of strings, else one a line), an empty answer is re-asked (`protocol.repair_request`), and `ModelAuthor`
runs them through the scheduler and the cache: a rerun makes only the calls that did not finish.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bespoke_dataset.building import Authored, ClaimTask, RubricTask
from bespoke_dataset.reading.payloads import claim_lines
from bespoke_dataset.vocabulary import DIMENSION_LABELS, DIMENSIONS
from bespoke_metric.backends.base import Backend, Request, Usage
from bespoke_metric.backends.reasoning import strip_reasoning
from bespoke_metric.calls.cache import Cache
from bespoke_metric.calls.progress import ProgressBar
from bespoke_metric.calls.scheduler import ParseError, run_requests_sync

from . import prompts
from .parsing import find_json
from .protocol import delimit, example_block, repair_request

RUBRIC_MAX_TOKENS = 2048
CLAIMS_MAX_TOKENS = 2048
PURPOSES = ("rubric", "claims")
"""What an authoring call is for: part of its cache key, beside `AUTHORING_VERSION`."""


def _message(system: str, user: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def rubric_request(task: RubricTask, *, max_tokens: int = RUBRIC_MAX_TOKENS) -> Request:
    """Ask for the rubric of `task`'s query, showing its judged examples as the judge will see them."""
    lines = "\n".join(f"- {DIMENSION_LABELS[dim]}: {prompts.DIMENSION_GUIDE[dim]}" for dim in DIMENSIONS)
    examples = "\n\n".join(example_block(number, shot) for number, shot in enumerate(task.shots, 1))
    user = prompts.RUBRIC_WRITER_USER.format(query=task.query.strip(), need=task.gold_information_need.strip(),
                                             section=prompts.RUBRIC_SECTION, examples=examples)
    return Request(messages=_message(prompts.RUBRIC_WRITER_SYSTEM.format(dimension_lines=lines), user),
                   max_tokens=max_tokens, json_schema=None)


def claims_request(task: ClaimTask, *, max_tokens: int = CLAIMS_MAX_TOKENS) -> Request:
    """Ask for the atomic claims of `task`'s gold response."""
    user = prompts.CLAIM_EXTRACTOR_USER.format(query=task.query.strip(), section=prompts.REFERENCE_SECTION,
                                               response=delimit("response", task.response))
    return Request(messages=_message(prompts.CLAIM_EXTRACTOR_SYSTEM, user), max_tokens=max_tokens, json_schema=None)


def parse_rubric(text: str) -> str:
    """The rubric: the answer's text without its reasoning block. ParseError when nothing is left."""
    rubric = strip_reasoning(text)
    if not rubric:
        raise ParseError("the answer is empty")
    return rubric


def parse_claims(text: str) -> list[str]:
    """The claims: a JSON list of strings (fenced or not; or an object holding just one such list, as
    ``{"claims": [...]}``), else the answer one claim a line (list markers removed). ParseError when no
    claim is left."""
    answer = strip_reasoning(text)
    found = find_json(answer)
    if isinstance(found, dict) and len(found) == 1:
        found = next(iter(found.values()))
    if isinstance(found, list) and all(isinstance(claim, str) for claim in found):
        claims = [claim.strip() for claim in found if claim.strip()]
    else:
        claims = claim_lines(answer)
    if not claims:
        raise ParseError("the answer lists no claim")
    return claims


@dataclass
class ModelAuthor:
    """Writes rubrics or extracts claims with one model: an `Author` for `build_release`, whose every call
    goes through the scheduler (concurrency, repair of unreadable answers) and the cache."""

    backend: Backend
    purpose: str
    """``rubric`` or ``claims``."""
    cache: Cache | None = None
    usage: Usage = field(default_factory=Usage)
    progress: bool = True
    max_parse_retries: int = 2

    def __post_init__(self) -> None:
        if self.purpose not in PURPOSES:
            raise ValueError(f"purpose must be one of {', '.join(PURPOSES)}, got {self.purpose!r}")

    def __call__(self, tasks: Sequence[Any]) -> list[Authored]:
        build: Callable[[Any], Request] = rubric_request if self.purpose == "rubric" else claims_request
        parse: Callable[[str], Any] = parse_rubric if self.purpose == "rubric" else parse_claims
        with ProgressBar(len(tasks), desc="rubrics" if self.purpose == "rubric" else "claims",
                         disable=not self.progress or not tasks) as bar:
            results = run_requests_sync(
                self.backend, [build(task) for task in tasks], cache=self.cache,
                key_extra={"purpose": self.purpose, "authoring_version": prompts.AUTHORING_VERSION},
                parse=lambda _, text: parse(text), repair=repair_request, max_parse_retries=self.max_parse_retries,
                progress=bar, usage=self.usage)
        return [Authored(result.value, result.error) for result in results]
