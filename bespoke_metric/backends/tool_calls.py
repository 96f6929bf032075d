"""Function calling with local models: whether a chat template takes tools, and the calls in what a model wrote.

An API returns tool calls as data; a local model (`hf:`, `vllm:`) writes them as text, in the shape its
chat template taught it. Rather than vLLM's server-side parsers (fragile: the Hermes parser errors on
Qwen3 output, drops braces, leaves calls in the content), the tools are rendered through the model's own
chat template and its output is read here, by one pure parser that knows the usual shapes:

- Hermes / Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one block per call (an
  unclosed last block, cut by the end of the turn, still counts);
- bare JSON, the whole answer: `{"name": ..., "arguments"|"parameters": {...}}` (Llama 3), several of them
  one after another or in a list (Mistral's `[TOOL_CALLS][...]` once its control token is decoded away),
  possibly in a ```json fence. Bare JSON counts only as a call to a tool that was offered: an answer that
  merely shows some JSON is not a call.

A block that is not valid JSON, or not an object with a name and an argument object, is no call: it stays
in the text, so nothing the model wrote is lost. The helpers at the end build the turns that continue a
conversation after a call, in OpenAI's chat shape, which every backend takes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Iterable, Mapping, Sequence

from .base import Completion, Request, ToolCall

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)
_SEPARATORS = " \t\r\n;,"


def tool_names(tools: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The names of tools in OpenAI's shape (`{"type": "function", "function": {"name", ...}}`)."""
    return tuple(str((tool.get("function") or tool).get("name", "")) for tool in tools)


def parse_tool_calls(text: str, names: Sequence[str] = ()) -> tuple[str, tuple[ToolCall, ...]]:
    """The text a model wrote, split into what remains of it and the tool calls in it.

    `names`: the tools offered; bare JSON is a call only to one of them (tagged calls count whatever their
    name: the model clearly meant a call, and the caller can answer that no such tool exists)."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    position = 0
    for match in _TAGGED.finditer(text):
        found = _calls_in(match.group(1).strip(), names=None)
        if found is None:
            continue  # not a call: the block stays in the text
        calls.extend(found)
        kept.append(text[position : match.start()])
        position = match.end()
    if calls:
        kept.append(text[position:])
        return "".join(kept).strip(), tuple(calls)
    bare = _bare_calls(text, names)
    if bare:
        return "", bare
    return text, ()


def decode_call(name: str, arguments: Any, id: str = "") -> ToolCall | None:
    """A call from its name and its arguments as an object or as JSON text (as APIs send them); None when
    the arguments are not a JSON object (the model's JSON is broken: no call can be made of it)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(name=name, arguments=arguments, id=id)


def with_tool_calls(completion: Completion, request: Request) -> Completion:
    """A local model's completion with the calls in its text parsed out, when the request offered tools."""
    if not request.tools:
        return completion
    text, calls = parse_tool_calls(completion.text, tool_names(request.tools))
    return dataclasses.replace(completion, text=text, tool_calls=calls)


def template_takes_tools(template: Any) -> bool:
    """Whether a chat template renders `tools` (a Jinja template's text, or transformers' named templates
    as a dict or a list of `{"name", "template"}`)."""
    if isinstance(template, list):
        template = {item.get("name"): item.get("template") for item in template if isinstance(item, dict)}
    if isinstance(template, dict):
        return "tool_use" in template or any(template_takes_tools(text) for text in template.values())
    if not isinstance(template, str) or not template:
        return False
    import jinja2
    import jinja2.meta

    try:
        tree = jinja2.Environment().parse(template)
    except jinja2.TemplateSyntaxError:  # an extension tag ({% generation %}): read the text instead
        return re.search(r"\btools\b", template) is not None
    return "tools" in jinja2.meta.find_undeclared_variables(tree)


# -- conversation turns ------------------------------------------------------------------------------


def assistant_turn(completion: Completion) -> dict[str, Any]:
    """The model's turn, to send back with the results of its calls: its text and its calls, in OpenAI's
    chat shape (arguments as JSON text)."""
    turn: dict[str, Any] = {"role": "assistant", "content": completion.text}
    if completion.tool_calls:
        turn["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
            for call in completion.tool_calls
        ]
    return turn


def tool_turn(call: ToolCall, content: str) -> dict[str, Any]:
    """The answer to one call, in OpenAI's chat shape (`name` too: some chat templates show it)."""
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def template_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages for a chat template: tool-call arguments as objects, as templates expect them
    (`tool_call.arguments | tojson`), where OpenAI's shape has JSON text."""
    out = []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = [_with_decoded_arguments(call) for call in message["tool_calls"]]
        out.append(message)
    return out


# -- internals -----------------------------------------------------------------------------------------


def _with_decoded_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    call = dict(call)
    function = dict(call.get("function") or {})
    if isinstance(function.get("arguments"), str):
        try:
            function["arguments"] = json.loads(function["arguments"])
        except ValueError:
            pass  # shown as the model wrote it
    call["function"] = function
    return call


def _bare_calls(text: str, names: Sequence[str]) -> tuple[ToolCall, ...]:
    """The calls of an answer that is nothing but JSON calls to offered tools, else none."""
    body = text.strip()
    body = body.removeprefix("<|python_tag|>").removeprefix("[TOOL_CALLS]").strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    if not body.startswith(("{", "[")):
        return ()
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while position < len(body):
        try:
            value, position = decoder.raw_decode(body, position)
        except ValueError:
            return ()
        values.append(value)
        while position < len(body) and body[position] in _SEPARATORS:
            position += 1
    calls: list[ToolCall] = []
    for value in values:
        found = _calls_of(value, names=names)
        if found is None:
            return ()
        calls.extend(found)
    return tuple(calls)


def _calls_in(block: str, names: Sequence[str] | None) -> list[ToolCall] | None:
    """The calls one tagged block holds (an object, or a list of them), or None if it is no call."""
    try:
        value = json.loads(block)
    except ValueError:
        return None
    return _calls_of(value, names)


def _calls_of(value: Any, names: Sequence[str] | None) -> list[ToolCall] | None:
    items = value if isinstance(value, list) else [value]
    calls = [_call(item, names) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _call(value: Any, names: Sequence[str] | None) -> ToolCall | None:
    """One call from `{"name", "arguments"|"parameters"}` (or OpenAI's `{"function": {...}}`). Bare JSON
    (`names` given) must name an offered tool and carry its arguments; a tagged call may omit them."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return None
    if names is not None and (name not in names or not ({"arguments", "parameters"} & value.keys())):
        return None
    return decode_call(name, value.get("arguments", value.get("parameters", {})), str(value.get("id") or ""))
