"""Anthropic's Messages API and Message Batches API on 127.0.0.1, for tests and examples, as strict as the
real one. Built on `server.TestServer` (faults, latency and recorded requests work as there):

    POST /v1/messages                          a `Message` (anthropic/types/message.py)
    POST /v1/messages/batches                  `{requests: [{custom_id, params}]}`: a `MessageBatch`
    GET  /v1/messages/batches/{id}             the batch, one step further on each look: `in_progress`, then `ended`
    GET  /v1/messages/batches?limit=N          the latest batches, newest first: `{data, has_more, first_id, last_id}`
    GET  /v1/messages/batches/{id}/results     JSONL of `MessageBatchIndividualResponse`s, once it has ended
    POST /v1/messages/batches/{id}/cancel      `canceling`, then `ended` with what had not run `canceled`

(anthropic/types/messages/message_batch.py, message_batch_individual_response.py, batch_create_params.py,
anthropic 2.17.) Every call needs the `x-api-key` (or a bearer key) and `anthropic-version` headers, or it is
a 401 `authentication_error`. A body may hold only the fields of the SDK's `MessageCreateParamsNonStreaming`
and of its tools' params (`ToolParam`, `WebSearchTool20250305Param` and its later versions,
`UserLocationParam`, `OutputConfigParam`, the tool choices), plus `temperature`, `top_p` and `top_k`, the
sampling parameters older models still take: anything else is a 400 `invalid_request_error`
("`tools.0.filters`: Extra inputs are not permitted"), as is a missing `max_tokens`, a tool with both
`allowed_domains` and `blocked_domains`, and a `temperature` sent to a model that refuses it (Opus 4.7 and
later, Fable: "`temperature` is deprecated for this model."). A body is validated by the installed SDK's own
request type too (a value of the wrong shape: an effort it does not name, a thinking budget missing), and
refused as the API refuses it for its model (`model_refusal`, as of 2026-12-04): a forced tool choice
(`tool`, `any`) with thinking on ("Thinking may not be enabled when tool_choice forces tool use."), on Opus
5.5 any forced tool choice and thinking `disabled` or with a budget (it thinks adaptively, always),
`output_config.format` to a Claude before structured outputs, tools to Claude 2, `output_config.effort` to a
Claude before Opus 4.5 or to Sonnet and Haiku 4.5 ("This model does not support the effort parameter."), and
an effort level the model does not take (`xhigh` before Opus 4.7 and Sonnet 5, `max` on Opus 4.5; Anthropic's
effort page, 2026-12-04). A model in `retired` is a 404
`not_found_error` ("model: NAME"). Errors are the SDK's `ErrorResponse`: `{type: "error", error: {type,
message}, request_id}`. With `limits` (`provider_limits.Limits(rpm=..., input_tpm=..., output_tpm=..., quota_calls=...)`)
it enforces Anthropic's rate limits and credit as the API does: `anthropic-ratelimit-*` headers on every answer,
429 `rate_limit_error` with `retry-after`, a spent credit balance (or spend limit) a 400; `OVERLOADED` scripts a 529.

Answers come from `responder(body)` (default `system_responder.answer_any`: a system model, a profiler and a
judge in one), wrapped as a `Message` whose `model` is the one asked (or `served[model]`):

- with the web search tool, the fake model searches twice, the question and the question with " reviews",
  over `provider_servers.PAGES` (filtered by the tool's domains): each search a `server_tool_use` block and a
  `web_search_tool_result` with its results (`url`, `title`, `page_age`, `encrypted_content`), a search past
  `max_uses` a `web_search_tool_result_error` `max_uses_exceeded` (as the API answers it); then the answer,
  and a text block quoting the first result with a `web_search_result_location` citation;
  `usage.server_tool_use.web_search_requests` counts the searches that ran;
- with a forced tool (`tool_choice` `{type: "tool", name}`), the answer's JSON object is that tool's
  `tool_use` input (`stop_reason` `tool_use`);
- with structured outputs (`output_config.format`), the text is the answer held to the schema
  (`held_answer`: the responder's JSON object, or a judge's lines read into the judgment's JSON);
- an answer longer than `max_tokens` words is cut there (`stop_reason` `max_tokens`); a question holding
  `REFUSE_WORD` is refused (`stop_reason` `refusal`, `stop_details`).

Usage is counted in words: `input_tokens` the prompt's, `output_tokens` the answer's plus `REASONING_TOKENS`
of thinking (`output_tokens_details.thinking_tokens`), and `CACHED_TOKENS` read from the prompt cache
(`cache_read_input_tokens`). A batch answers each request as a direct call would (`service_tier` `batch`),
or errors it as a direct call would be refused; `hold_batches` keeps every batch `in_progress` (to kill a
driver while its batches run), `fates` ends the next batches `canceled` or `expired` after answering the
first `partial` share of their requests, `lose_creations` answers that many batch creations with a 500
after making the batch (an answer lost on the way), and `hold_creations` holds each batch creation while it
is set, to kill a driver before it records the batch's id: `made` makes the batch and holds back the answer
naming it, `unmade` holds the request and then drops it, no batch made (as if the driver died before sending
it). `processed` counts the requests the batches ran.

    with serve_anthropic() as server:
        backend = make_backend("anthropic:claude-sonnet-5-5", base_url=server.root_url, api_key="test")

`python -m fakes.anthropic_server --url-file FILE` runs one until it is stopped, writing its
base URL to FILE once it listens.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import functools
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from bespoke_metric.testing.provider_limits import anthropic_error
from bespoke_metric.testing.server import (
    Fault,
    RecordedRequest,
    RequestHandler,
    Responder,
    TestServer,
    messages_of,
    serve_until_stopped,
)
from bespoke_metric.testing.system_responder import answer_any
from fakes.provider_servers import CACHED_TOKENS, REASONING_TOKENS, Page, search_pages

MESSAGES_ROUTE = "/v1/messages"
BATCHES_ROUTE = "/v1/messages/batches"
REFUSE_WORD = "REFUSEME"
"""A question holding this word is refused (`stop_reason` `refusal`)."""
SAMPLING = frozenset({"temperature", "top_p", "top_k"})
"""The Messages API's sampling parameters: taken by the models before Opus 4.7 (the SDK 2.x types no longer
name them)."""
REQUIRED = ("max_tokens", "messages", "model")
"""`MessageCreateParamsBase`'s `Required[...]` fields."""
_NO_TEMPERATURE = re.compile(r"claude-(?:opus-(?:4-(?:[7-9]|[1-9]\d)|[5-9]|[1-9]\d)(?:-|$)|fable)", re.IGNORECASE)
_ADAPTIVE_ONLY = re.compile(r"claude-opus-(?:5-(?:[5-9]|[1-9]\d)|[6-9]|[1-9]\d)(?:-|$)", re.IGNORECASE)
"""Opus 5.5 and later: adaptive thinking only (thinking `disabled` or a budget is a 400), always on."""
_NO_FORMAT = re.compile(r"claude-(?:[23]|instant|(?:opus|sonnet)-4(?:-0)?(?:-\d{8})?$)", re.IGNORECASE)
"""The models that answer `output_config.format` with a 400: those before structured outputs (Claude 2, 3, and
Sonnet and Opus 4.0)."""
_NO_TOOLS = re.compile(r"claude-(?:2|instant)", re.IGNORECASE)
"""The models that answer `tools` with a 400: those before tool use (Claude 2 and Instant)."""
_NO_EFFORT = re.compile(r"claude-(?:[23]|instant|(?:opus|sonnet)-4(?:-0)?(?:-\d{8})?$|opus-4-1(?:-|$)|"
                        r"(?:sonnet|haiku)-4-5(?:-|$))", re.IGNORECASE)
"""The models that answer `output_config.effort` with a 400: every Claude before Opus 4.5, and Sonnet and Haiku 4.5."""
_LEVELS_REFUSED = ((re.compile(r"claude-opus-4-5(?:-|$)", re.IGNORECASE), frozenset({"xhigh", "max"})),
                   (re.compile(r"claude-(?:opus|sonnet)-4-6(?:-|$)", re.IGNORECASE), frozenset({"xhigh"})))
"""The effort levels the models that take an effort refuse: Opus 4.5 takes low to high, the 4.6 models no `xhigh`."""
FORCED = frozenset({"tool", "any"})
"""The `tool_choice` types that force a tool call."""
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""A batch request's `custom_id` (the Message Batches API's pattern)."""


@functools.cache
def _fields() -> dict[str, frozenset[str]]:
    """The fields the API takes, read off the SDK's request types."""
    from anthropic.types import (
        json_output_format_param,
        message_create_params,
        output_config_param,
        tool_choice_any_param,
        tool_choice_auto_param,
        tool_choice_none_param,
        tool_choice_tool_param,
        tool_param,
        user_location_param,
        web_search_tool_20250305_param,
        web_search_tool_20260209_param,
        web_search_tool_20260318_param,
    )
    from anthropic.types.messages import batch_create_params

    def names(typed: Any) -> frozenset[str]:
        return frozenset(typed.__annotations__)

    return {
        "": names(message_create_params.MessageCreateParamsNonStreaming) | SAMPLING,
        "custom": names(tool_param.ToolParam),
        "web_search_20250305": names(web_search_tool_20250305_param.WebSearchTool20250305Param),
        "web_search_20260209": names(web_search_tool_20260209_param.WebSearchTool20260209Param),
        "web_search_20260318": names(web_search_tool_20260318_param.WebSearchTool20260318Param),
        "user_location": names(user_location_param.UserLocationParam),
        "output_config": names(output_config_param.OutputConfigParam),
        "format": names(json_output_format_param.JSONOutputFormatParam),
        "tool": names(tool_choice_tool_param.ToolChoiceToolParam),
        "auto": names(tool_choice_auto_param.ToolChoiceAutoParam),
        "any": names(tool_choice_any_param.ToolChoiceAnyParam),
        "none": names(tool_choice_none_param.ToolChoiceNoneParam),
        "message": frozenset({"role", "content"}),
        "batch": names(batch_create_params.BatchCreateParams),
        "batch_request": names(batch_create_params.Request),
    }


@functools.cache
def _params_type() -> Any:
    """The SDK's `MessageCreateParamsNonStreaming` as a pydantic validator: a value of the wrong type or shape
    (an effort it does not name, a format that is not `json_schema`, a budget missing) is a 400."""
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from pydantic import TypeAdapter

    return TypeAdapter(MessageCreateParamsNonStreaming)


def type_error(params: dict[str, Any]) -> str | None:
    """The first place where `params` is not what the SDK's request type says (`loc: message`), or None."""
    from pydantic import ValidationError

    try:
        _params_type().validate_python(params)
    except ValidationError as error:
        first = error.errors()[0]
        return f"{'.'.join(str(part) for part in first['loc'])}: {first['msg']}"
    return None


def model_refusal(params: dict[str, Any]) -> str | None:
    """What the Messages API refuses of a body for its model, in its words, or None: `temperature` on the
    models that refuse it, thinking `disabled` or a budget on Opus 5.5, a forced tool choice with thinking on
    (on Opus 5.5 always), `output_config.format` on a model without structured outputs, tools before Claude 3,
    an effort (or an effort level) the model does not take."""
    model = str(params["model"])
    thinking = str((params.get("thinking") or {}).get("type") or "")
    forced = str((params.get("tool_choice") or {}).get("type") or "") in FORCED
    if "temperature" in params and _NO_TEMPERATURE.search(model):
        return "`temperature` is deprecated for this model."
    if _ADAPTIVE_ONLY.search(model) and thinking in ("disabled", "enabled"):
        return (f"thinking.type: '{thinking}' is not supported for this model; use 'adaptive' with "
                "output_config.effort to control thinking.")
    if forced and _ADAPTIVE_ONLY.search(model):
        return "tool_choice: forcing tool use is not supported for this model; use tool_choice 'auto'."
    if forced and thinking in ("enabled", "adaptive"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    if (params.get("output_config") or {}).get("format") is not None and _NO_FORMAT.search(model):
        return "output_config.format: structured outputs are not supported for this model."
    if params.get("tools") and _NO_TOOLS.search(model):
        return "tools: tool use is not supported for this model."
    effort = (params.get("output_config") or {}).get("effort")
    if effort is not None and _NO_EFFORT.search(model):
        return "This model does not support the effort parameter."
    if any(effort in levels and pattern.search(model) for pattern, levels in _LEVELS_REFUSED):
        return f"output_config.effort: '{effort}' is not supported for this model."
    return None


error_body = anthropic_error
"""Anthropic's `ErrorResponse` body: `error_body(kind, message)`."""
OVERLOADED = Fault(status=529, body=error_body("overloaded_error", "Overloaded"))
"""Anthropic's 529: the API, not the account, is at its limit (docs.claude.com/en/api/errors); script it with
`faults=[OVERLOADED]` or a `rule`."""


def params_error(params: Any, retired: frozenset[str]) -> tuple[int, dict[str, Any]] | None:
    """The status and error the Messages API answers a body with, or None for a body it takes."""
    fields = _fields()
    if not isinstance(params, dict):
        return 400, error_body("invalid_request_error", "body: Input should be an object")
    checks: list[tuple[str, Any, frozenset[str]]] = [("", params, fields[""])]
    for number, message in enumerate(params.get("messages") or ()):
        checks.append((f"messages.{number}.", message, fields["message"]))
    for number, tool in enumerate(params.get("tools") or ()):
        kind = tool.get("type") or "custom"
        checks.append((f"tools.{number}.", tool, fields.get(kind, frozenset())))
        checks.append((f"tools.{number}.user_location.", tool.get("user_location"), fields["user_location"]))
        if tool.get("allowed_domains") and tool.get("blocked_domains"):
            return 400, error_body("invalid_request_error", f"tools.{number}: Cannot specify both allowed_domains and "
                                                            "blocked_domains in the same request.")
    checks.append(("output_config.", params.get("output_config"), fields["output_config"]))
    checks.append(("output_config.format.", (params.get("output_config") or {}).get("format"), fields["format"]))
    choice = params.get("tool_choice")
    checks.append(("tool_choice.", choice, fields.get(str((choice or {}).get("type")), frozenset())))
    for where, part, known in checks:
        for name in part if isinstance(part, dict) else ():
            if name not in known:
                return 400, error_body("invalid_request_error", f"{where}{name}: Extra inputs are not permitted")
    for name in REQUIRED:
        if name not in params:
            return 400, error_body("invalid_request_error", f"{name}: Field required")
    model = str(params["model"])
    if model in retired:
        return 404, error_body("not_found_error", f"model: {model}")
    refused = type_error(params) or model_refusal(params)
    return None if refused is None else (400, error_body("invalid_request_error", refused))


def _words(text: str) -> int:
    return len(text.split())


def _question(body: dict[str, Any]) -> str:
    users = [m["content"] for m in messages_of(body) if m["role"] == "user" and m["content"]]
    return users[-1] if users else ""


def _search_blocks(tool: dict[str, Any], question: str, number: int) -> tuple[list[dict[str, Any]], list[Page]]:
    """Two searches of the fake web as content blocks, and the pages they found."""
    allowed, blocked = tool.get("allowed_domains") or (), tool.get("blocked_domains") or ()
    pages = [page for page in search_pages(question, k=len(search_pages(question, k=99)))
             if (not allowed or urlsplit(page.url).hostname in allowed) and urlsplit(page.url).hostname not in blocked][:3]
    blocks: list[dict[str, Any]] = []
    found: list[Page] = []
    for index, (query, results) in enumerate(((question, pages[:2]), (f"{question} reviews", pages[1:])), 1):
        use_id = f"srvtoolu_{number:06d}{index:02d}"
        blocks.append({"type": "server_tool_use", "id": use_id, "name": "web_search", "input": {"query": query}})
        if tool.get("max_uses") is not None and index > int(tool["max_uses"]):
            content: Any = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
        else:
            content = [{"type": "web_search_result", "url": page.url, "title": page.title, "page_age": page.date,
                        "encrypted_content": f"enc-{page.url}"} for page in results]
            found += [page for page in results if page not in found]
        blocks.append({"type": "web_search_tool_result", "tool_use_id": use_id, "content": content})
    return blocks, found


@dataclass
class MessageBatch:
    """A Message Batch as the server runs it."""

    id: str
    requests: list[dict[str, Any]]
    fate: str
    created_at: str
    status: str = "in_progress"
    results: list[dict[str, Any]] = field(default_factory=list)
    cancel_initiated_at: str | None = None
    ended_at: str | None = None
    looked: bool = False
    """Retrieved once already: it ends on the next look."""

    def to_json(self, root: str) -> dict[str, Any]:
        kinds = collections.Counter(result["result"]["type"] for result in self.results)
        ended = self.status == "ended"
        return {"id": self.id, "type": "message_batch", "processing_status": self.status,
                "request_counts": {"processing": 0 if ended else len(self.requests), "succeeded": kinds["succeeded"],
                                   "errored": kinds["errored"], "canceled": kinds["canceled"], "expired": kinds["expired"]},
                "created_at": self.created_at, "expires_at": self.created_at, "ended_at": self.ended_at,
                "cancel_initiated_at": self.cancel_initiated_at, "archived_at": None,
                "results_url": f"{root}{BATCHES_ROUTE}/{self.id}/results" if ended else None}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class AnthropicServer(TestServer):
    """A `TestServer` answering Anthropic's Messages and Message Batches APIs. See the module docstring."""

    url_path = ""
    provider = "anthropic"

    def __init__(self, responder: Responder = answer_any, *, retired: tuple[str, ...] = (), fates: list[str] | None = None,
                 partial: float = 0.5, hold_batches: bool = False, lose_creations: int = 0,
                 hold_creations: Literal["made", "unmade"] | None = None,
                 **options: Any) -> None:
        super().__init__(responder, **options)
        self.paths = (MESSAGES_ROUTE,)
        self.retired = frozenset(retired)
        """Models answered with a 404 `not_found_error`."""
        self.served: dict[str, str] = {}
        """Model asked -> the model an answer says served it (a dated snapshot of an alias)."""
        self.fates: collections.deque[str] = collections.deque(fates or [])
        """The ends of the next batches: `succeeded` (the default: every request run), `canceled`, `expired`."""
        self.partial = partial
        self.hold_batches = hold_batches
        self.lose_creations = lose_creations
        self.hold_creations = hold_creations
        self.batches: dict[str, MessageBatch] = {}
        self.processed = 0
        """Requests the batches ran (each is billed once)."""
        self.refused: list[str] = []
        """Every error message a call was refused with (a field it did not take, a required one missing)."""
        self._messages = itertools.count(1)
        self._batch_ids = itertools.count(1)

    @property
    def root_url(self) -> str:
        """The base URL to give the `anthropic:` engine (and the SDK): the server without a path."""
        return self.base_url

    @property
    def batch_creations(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and urlsplit(r.path).path == BATCHES_ROUTE]

    @property
    def direct_calls(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and urlsplit(r.path).path == MESSAGES_ROUTE]

    def counts(self, record: RecordedRequest) -> bool:
        return record.method == "POST" and urlsplit(record.path).path == MESSAGES_ROUTE

    # -- answers -------------------------------------------------------------------------------------

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.message(body, tier="standard")

    def message(self, body: dict[str, Any], *, tier: str) -> dict[str, Any]:
        """The `Message` answering a body the API takes."""
        number = next(self._messages)
        model = self.served.get(str(body["model"]), str(body["model"]))
        answer = self.responder(body)
        if isinstance(answer, dict):  # a whole body in the provider's own shape
            return answer
        text = str(getattr(answer, "text", answer))
        question = _question(body)
        content: list[dict[str, Any]] = []
        searches = 0
        tool = next((t for t in body.get("tools") or () if str(t.get("type", "")).startswith("web_search_")), None)
        if tool is not None:
            blocks, found = _search_blocks(tool, question, number)
            content += blocks
            searches = sum(1 for block in blocks if isinstance(block.get("content"), list))
        stop, details = "end_turn", None
        forced = (body.get("tool_choice") or {}).get("name") if (body.get("tool_choice") or {}).get("type") == "tool" else None
        formatted = ((body.get("output_config") or {}).get("format") or {}).get("schema")
        limit = int(body["max_tokens"])
        if _words(text) > limit:
            text, stop = " ".join(text.split()[:limit]), "max_tokens"
        if REFUSE_WORD in question:
            content, stop = [], "refusal"
            details = {"type": "refusal", "category": "general_harms", "explanation": "This request was declined."}
        elif formatted is not None and stop != "max_tokens":
            content.append({"type": "text", "text": json.dumps(held_answer(text, formatted)), "citations": None})
        elif forced is not None and _json_object(text) is not None and stop != "max_tokens":
            content.append({"type": "tool_use", "id": f"toolu_{number:06d}", "name": forced, "input": _json_object(text)})
            stop = "tool_use"
        else:
            content.append({"type": "text", "text": text, "citations": None})
            if tool is not None and found and stop != "max_tokens":
                content.append({"type": "text", "text": f" {found[0].snippet}", "citations": [
                    {"type": "web_search_result_location", "url": found[0].url, "title": found[0].title,
                     "cited_text": found[0].snippet, "encrypted_index": f"idx-{found[0].url}"}]})
        prompt = " ".join(m["content"] for m in messages_of(body))
        written = " ".join(block.get("text", "") for block in content if block["type"] == "text")
        usage: dict[str, Any] = {"input_tokens": _words(prompt), "output_tokens": _words(written) + REASONING_TOKENS,
                                 "cache_read_input_tokens": CACHED_TOKENS, "cache_creation_input_tokens": 0,
                                 "output_tokens_details": {"thinking_tokens": REASONING_TOKENS}, "service_tier": tier}
        if tool is not None:
            usage["server_tool_use"] = {"web_search_requests": searches, "web_fetch_requests": 0}
        return {"id": f"msg_{number:06d}", "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stop, "stop_sequence": None, "stop_details": details, "usage": usage}

    # -- batches ---------------------------------------------------------------------------------------

    def create_batch(self, body: Any) -> tuple[int, dict[str, Any]]:
        fields = _fields()
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, error_body("invalid_request_error", "requests: Field required")
        extra = sorted(set(body) - fields["batch"])
        if extra:
            return 400, error_body("invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
        seen: set[str] = set()
        for number, request in enumerate(requests):
            unknown = sorted(set(request) - fields["batch_request"]) if isinstance(request, dict) else ["request"]
            if unknown:
                return 400, error_body("invalid_request_error", f"requests.{number}.{unknown[0]}: Extra inputs are not permitted")
            custom = str(request.get("custom_id"))
            if not _CUSTOM_ID.match(custom) or custom in seen:
                return 400, error_body("invalid_request_error", f"requests.{number}.custom_id: must be unique and match "
                                                                "^[a-zA-Z0-9_-]{1,64}$")
            if not isinstance(request.get("params"), dict):
                return 400, error_body("invalid_request_error", f"requests.{number}.params: Field required")
            seen.add(custom)
        with self._lock:
            batch = MessageBatch(f"msgbatch_{next(self._batch_ids):06d}", requests,
                                 self.fates.popleft() if self.fates else "succeeded", _now())
            self.batches[batch.id] = batch
        return 200, batch.to_json(self.base_url)

    def retrieve(self, batch_id: str) -> MessageBatch | None:
        """The batch, ended on the look after its first one (never while `hold_batches`)."""
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        with self._lock:
            if batch.status != "ended" and not self.hold_batches and (batch.looked or batch.status == "canceling"):
                self._run(batch)
            batch.looked = True
        return batch

    def cancel(self, batch_id: str) -> MessageBatch | None:
        batch = self.batches.get(batch_id)
        if batch is not None and batch.status == "in_progress":
            with self._lock:
                batch.status, batch.fate, batch.cancel_initiated_at = "canceling", "canceled", _now()
        return batch

    def _run(self, batch: MessageBatch) -> None:
        """Run the batch's requests (a share of them for one canceled or expired) into its results."""
        answered = len(batch.requests) if batch.fate == "succeeded" else int(len(batch.requests) * self.partial)
        for number, request in enumerate(batch.requests):
            result: dict[str, Any]
            if number >= answered:
                result = {"type": batch.fate}
            else:
                refused = params_error(request["params"], self.retired)
                self.processed += 1
                result = ({"type": "errored", "error": refused[1]} if refused is not None else
                          {"type": "succeeded", "message": self.message(request["params"], tier="batch")})
            batch.results.append({"custom_id": request["custom_id"], "result": result})
        batch.status, batch.ended_at = "ended", _now()


def held_answer(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The answer held to `schema`, as structured outputs give it: the responder's JSON object, or its
    answer in the protocol's lines read into the judgment's or the claim's JSON (`judging.parsing`)."""
    from bespoke_dataset.vocabulary import DIMENSIONS
    from bespoke_metric.judging.parsing import parse_claim_verdict, parse_personalization

    found = _json_object(text)
    if found is not None:
        return found
    properties = schema.get("properties") or {}
    if "verdict" in properties:
        return {"reasoning": text, "verdict": parse_claim_verdict(text)}
    if set(DIMENSIONS) <= set(properties):
        judgment = parse_personalization(text)
        return {"reasoning": "Scored from the lines.",
                **{dim: {"score": judgment.scores[dim], "feedback": judgment.feedback[dim]} for dim in DIMENSIONS}}
    return {"answer": text}


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _AnthropicHandler(RequestHandler):
    state: AnthropicServer

    def _refusal(self) -> tuple[int, dict[str, Any]] | None:
        """The 401 or 400 of a call without Anthropic's headers."""
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            return 401, error_body("authentication_error", "x-api-key header is required")
        if not self.headers.get("anthropic-version"):
            return 400, error_body("invalid_request_error", "anthropic-version: header is required")
        return None

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        route = urlsplit(self.path)
        record = self._record(None)
        state = self.state
        parts = route.path.rstrip("/").split("/")
        refused = self._refusal()
        if refused is not None:
            self._send(record, *refused)
        elif route.path.rstrip("/") == BATCHES_ROUTE:
            limit = int((parse_qs(route.query).get("limit") or ["20"])[0])
            listed = [b.to_json(state.base_url) for b in sorted(state.batches.values(), key=lambda b: b.id, reverse=True)[:limit]]
            self._send(record, 200, {"data": listed, "has_more": False, "first_id": listed[0]["id"] if listed else None,
                                     "last_id": listed[-1]["id"] if listed else None})
        elif len(parts) == 5 and route.path.startswith(BATCHES_ROUTE) and (batch := state.retrieve(parts[4])) is not None:
            self._send(record, 200, batch.to_json(state.base_url))
        elif len(parts) == 6 and parts[5] == "results" and parts[4] in state.batches:
            batch = state.batches[parts[4]]
            if batch.status != "ended":
                self._send(record, 400, error_body("invalid_request_error", f"Message batch {batch.id} has not ended"))
            else:
                self._send_bytes(record, "".join(json.dumps(result) + "\n" for result in batch.results).encode(),
                                "application/binary")  # what the SDK asks for (Accept, resources/messages/batches.py)
        else:
            self._send(record, 404, error_body("not_found_error", f"No such route or object: {route.path}"))

    def do_POST(self) -> None:  # noqa: N802
        route = urlsplit(self.path).path.rstrip("/")
        if route == MESSAGES_ROUTE:
            super().do_POST()
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        record = self._record(body)
        state = self.state
        parts = route.split("/")
        refused = self._refusal()
        if refused is not None:
            self._send(record, *refused)
        elif route == BATCHES_ROUTE:
            if state.hold_creations == "unmade":
                while state.hold_creations and not state._stopping.wait(0.01):
                    pass
                self.close_connection = True  # dropped unanswered, no batch made
                return
            status, answer = state.create_batch(body)
            if status == 200 and state.lose_creations > 0:
                state.lose_creations -= 1
                status, answer = 500, error_body("api_error", "Internal server error")
            while status == 200 and state.hold_creations == "made" and not state._stopping.wait(0.01):
                pass  # the batch is made, the answer that names it held back
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a driver killed while it waited
                self._send(record, status, answer)
        elif len(parts) == 6 and parts[5] == "cancel" and (batch := state.cancel(parts[4])) is not None:
            self._send(record, 200, batch.to_json(state.base_url))
        else:
            self._send(record, 404, error_body("not_found_error", f"No such route or object: {route}"))

    def _handle(self, record: RecordedRequest, body: dict[str, Any] | None, fault: Any) -> None:
        refused = self._refusal()
        if refused is None and (fault is None or not fault.status):
            refused = params_error(body, self.state.retired)
        if refused is not None:
            with self.state._lock:
                self.state.refused.append(refused[1]["error"]["message"])
            self._send(record, *refused)
            return
        super()._handle(record, body, fault)

    def _record(self, body: dict[str, Any] | None) -> RecordedRequest:
        record = RecordedRequest(self.command, self.path, dict(self.headers.items()), body, time.monotonic())
        with self.state._lock:  # recorded, but not a Messages call: no fault, no rule
            self.state.requests.append(record)
        return record


AnthropicServer.handler = _AnthropicHandler


def serve_anthropic(responder: Responder = answer_any, **options: Any) -> AnthropicServer:
    """Run an `AnthropicServer` on a free port of 127.0.0.1 for the duration of the `with` block (options as
    `AnthropicServer` takes them); give the engine `base_url=server.root_url`."""
    return AnthropicServer(responder, **options)


def main(argv: list[str] | None = None) -> int:
    """`python -m fakes.anthropic_server --url-file FILE`: serve (as a Claude system and a
    Claude judge both, `answer_any`) until stopped, the base URL written to FILE once it listens."""
    return serve_until_stopped(AnthropicServer(), argv, prog="python -m fakes.anthropic_server",
                               description="serve Anthropic's Messages and Message Batches APIs on 127.0.0.1, "
                                           "answering as the stand-in system and judge")

if __name__ == "__main__":
    raise SystemExit(main())
