"""The pure parts of searching with a model: results as the model reads them, and the queries it writes.

`render_search_results` numbers results for the prompt (continuing a conversation's numbering, so an
answer's `[n]` names one result); `rewrite_queries` reads the queries of a `rewrite` answer;
`search_calls` reads the searches an `agent` turn asks for, from the completion's tool calls or from
the lines of the plain-text protocol (`SEARCH: ...`); `turn_messages` writes a turn and its results back
into the conversation, in OpenAI's chat shape (an assistant message with `tool_calls`, then one `tool`
message per call), or as plain text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bespoke_metric.backends.base import Completion
from bespoke_metric.systems.prompts import (
    AGENT_CONTINUE,
    AGENT_LAST_CALL,
    AGENT_SEARCH_LINE,
    NO_SEARCH_RESULTS,
    SEARCH_QUERY_DESCRIPTION,
    SEARCH_RESULT_TEMPLATE,
    SEARCH_RESULT_WITHOUT_URL_TEMPLATE,
    SEARCH_RESULTS_FOR_HEADING,
    SEARCH_RESULTS_HEADING,
    SEARCH_TOOL_DESCRIPTION,
    UNTITLED,
)
from bespoke_metric.systems.tokens import TokenCounter

SEARCH_TOOL_NAME = "search"

_SEARCH_LINE = re.compile(rf"^[ \t>*_-]*{re.escape(AGENT_SEARCH_LINE.rstrip(':'))}[*_]*[ \t]*:[ \t*_]*(.+?)[ \t*_]*$", re.I | re.M)
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|q\d+[:.)])\s*", re.I)


def search_tool() -> dict[str, Any]:
    """The `search(query)` function tool, in OpenAI's shape (`Request.tools`)."""
    return {"type": "function", "function": {
        "name": SEARCH_TOOL_NAME, "description": SEARCH_TOOL_DESCRIPTION,
        "parameters": {"type": "object", "required": ["query"],
                       "properties": {"query": {"type": "string", "description": SEARCH_QUERY_DESCRIPTION}}},
    }}


def render_search_results(results: Sequence[Mapping[str, str]], budget: int, counter: TokenCounter, *,
                          heading: str = SEARCH_RESULTS_HEADING, first: int = 1) -> str:
    """Results as a list numbered from `first`: `[n] title (url)` + text, under `heading`, cut to `budget`
    tokens. No results: the empty string under the default heading, else `heading` and a line saying so."""
    if not results:
        return "" if heading == SEARCH_RESULTS_HEADING else f"{heading}\n{NO_SEARCH_RESULTS}"
    lines = [heading]
    for number, result in enumerate(results, start=first):
        template = SEARCH_RESULT_TEMPLATE if result.get("url") else SEARCH_RESULT_WITHOUT_URL_TEMPLATE
        title = result.get("title") or UNTITLED
        lines.append(template.format(number=number, title=title, url=result.get("url"), text=str(result.get("text") or "").strip()))
    return counter.truncate("\n\n".join(lines), budget)


def results_for(query: str, results: Sequence[Mapping[str, str]], budget: int, counter: TokenCounter, first: int) -> str:
    """One search's results under the heading naming its query."""
    return render_search_results(results, budget, counter, heading=SEARCH_RESULTS_FOR_HEADING.format(query=query), first=first)


def rewrite_queries(answer: str, count: int) -> list[str]:
    """The first `count` distinct queries of a `rewrite` answer: one a line, list marks and quotes off,
    lines introducing the list (ending in a colon) skipped."""
    queries: dict[str, str] = {}
    for line in answer.splitlines():
        query = _LIST_MARK.sub("", line).strip().strip("\"'`*").strip()
        if not query or query.endswith(":"):
            continue
        queries.setdefault(query.casefold(), query)
        if len(queries) == count:
            break
    return list(queries.values())


def search_calls(completion: Completion, answer: str, *, tools: bool) -> list[tuple[str, str]]:
    """`(call id, query)` of each search an agent turn asks for: its `search` tool calls (`tools`), or the
    `SEARCH:` lines of its answer (the reasoning left out); empty when the turn is an answer."""
    if tools:
        return [(call.id, str(call.arguments["query"])) for call in completion.tool_calls
                if call.name == SEARCH_TOOL_NAME and str(call.arguments.get("query") or "").strip()]
    return [("", match.group(1).strip()) for match in _SEARCH_LINE.finditer(answer)]


def without_search_lines(answer: str) -> str:
    """An answer of the plain-text protocol without any `SEARCH:` line."""
    return _SEARCH_LINE.sub("", answer).strip()


def turn_messages(answer: str, calls: Sequence[tuple[str, str]], rendered: Sequence[str], *, tools: bool,
                  round_: int, rounds_left: int) -> list[dict[str, Any]]:
    """The messages that continue a conversation after an agent turn that searched: the turn itself, the
    results of each of its `calls` (`rendered`), and what the model may do next."""
    next_step = AGENT_CONTINUE.format(left=rounds_left) if rounds_left else AGENT_LAST_CALL
    if not tools:
        searches = "\n".join(f"{AGENT_SEARCH_LINE} {query}" for _, query in calls)
        return [{"role": "assistant", "content": searches},
                {"role": "user", "content": "\n\n".join([*rendered, next_step])}]
    ids = [call_id or f"call_{round_}_{number}" for number, (call_id, _) in enumerate(calls, start=1)]
    assistant = {"role": "assistant", "content": answer, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": SEARCH_TOOL_NAME, "arguments": json.dumps({"query": query}, ensure_ascii=False)}}
        for call_id, (_, query) in zip(ids, calls, strict=True)
    ]}
    messages: list[dict[str, Any]] = [assistant]
    messages += [{"role": "tool", "tool_call_id": call_id, "name": SEARCH_TOOL_NAME, "content": text}
                 for call_id, text in zip(ids, rendered, strict=True)]
    if not rounds_left:
        messages.append({"role": "user", "content": AGENT_LAST_CALL})
    return messages
