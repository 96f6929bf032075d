"""What a request body to a chat API says, whichever API it was sent to: the test servers, their limits and the
stand-in responders read prompts through here."""

from __future__ import annotations

from typing import Any


def messages_of(body: dict[str, Any]) -> list[dict[str, str]]:
    """The chat messages of a chat-completions, Responses API or Anthropic Messages API request body, as
    role/content dicts (the Messages API's top-level `system` first)."""
    if "messages" in body:
        system = [{"role": "system", "content": _text_of(body["system"])}] if body.get("system") else []
        return system + [{"role": m["role"], "content": _text_of(m.get("content"))} for m in body["messages"]]
    messages = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input", [])
    if isinstance(given, str):
        return messages + [{"role": "user", "content": given}]
    for item in given:
        messages.append({"role": item.get("role", "user"), "content": _text_of(item.get("content"))})
    return messages


def _text_of(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))
