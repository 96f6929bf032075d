"""Fakes of the search-augmented providers on 127.0.0.1, each answering in its provider's documented JSON.

Built on `server.serve` (faults, latency and recorded requests work as there), each responder returns a
whole response body in its provider's shape:

- `openai_responder`: OpenAI's Responses API with `web_search_call` items (a `search` with its sources,
  an `open_page`) and `url_citation` annotations (or none, `cite=False`), and chat completions with
  `message.annotations` (for `web_search_options`) and `tool_calls` (for `tools=`);
- `perplexity_responder`: Perplexity's `citations`, `search_results` and `usage.num_search_queries`,
  answering without any of them when the request says `disable_search`;
- `gemini_responder`: Gemini's `generateContent` with `groundingMetadata` (`webSearchQueries`,
  `groundingChunks`, `groundingSupports`) when the request carries the Google Search tool.

They search a small fixed web (`PAGES`), so what a test expects follows from its question. A model
offered tools calls the first one with `{"query": QUESTION}` until it has a tool's answer, then answers.
Every usage block reports reasoning tokens (`REASONING_TOKENS`) and, but Perplexity's (which has no such
field), cached input tokens (`CACHED_TOKENS`).

    with serve_provider(perplexity_responder()) as server:
        backend = make_backend("perplexity:sonar", base_url=root_url(server), api_key="test")
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from .server import Responder, TestServer, messages_of, serve

CACHED_TOKENS = 3
"""Input tokens every fake reports as served from the provider's prompt cache."""
REASONING_TOKENS = 5
"""Output tokens every fake reports as spent on hidden reasoning."""
GEMINI_ROUTE = ":generateContent"


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    snippet: str
    date: str


PAGES: tuple[Page, ...] = (
    Page("https://trails.example/bukhansan", "Bukhansan trails", "Weekend crowds on the Baegundae trail peak at 10am.", "2025-04-02"),
    Page("https://trails.example/gwanaksan", "Gwanaksan for beginners", "A two-hour loop from Seoul National University.", "2025-03-11"),
    Page("https://laptops.example/ml", "Laptops for machine learning", "Pick 32 GB of memory and a GPU with 12 GB.", "2025-05-20"),
    Page("https://recipes.example/vegan-bibimbap", "Vegan bibimbap", "Swap the egg for tofu and the beef for mushrooms.", "2024-11-30"),
    Page("https://docs.example/asyncio", "asyncio in ten minutes", "An event loop runs coroutines; gather awaits many.", "2025-01-15"),
)


def search_pages(query: str, k: int = 3) -> list[Page]:
    """The `k` pages sharing most words with `query` (ties in `PAGES` order)."""
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    scored = sorted(PAGES, key=lambda page: -len(words & set(re.findall(r"[a-z0-9]+", f"{page.title} {page.snippet} {page.url}".lower()))))
    return scored[:k]


def answer_citing(question: str, pages: list[Page]) -> str:
    """The fakes' answer: one sentence per page, marked `[n]` as Perplexity marks them."""
    return f"On {question!r}: " + " ".join(f"{page.snippet} [{number}]" for number, page in enumerate(pages, 1))


def _usage_numbers(prompt: str, text: str) -> tuple[int, int]:
    return max(len(prompt.split()), CACHED_TOKENS), len(text.split()) + REASONING_TOKENS


# -- OpenAI: Responses API and chat completions ---------------------------------------------------------


def openai_responder(*, cite: bool = True) -> Responder:
    """Answers Responses and chat-completions bodies alike (see the module docstring); `cite=False`: the
    answer carries no `url_citation` annotation (as many real ones), only the searched sources."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        return _responses(body, cite) if "input" in body else _chat(body, cite)

    return respond


def _question(body: dict[str, Any]) -> str:
    users = [m["content"] for m in messages_of(body) if m["role"] == "user" and m["content"]]
    return users[-1] if users else ""


def _wants_call(body: dict[str, Any], answered: bool) -> str | None:
    """The tool the fake model calls: the first offered, unless a tool has answered already."""
    tools = body.get("tools") or ()
    names = [(tool.get("function") or tool).get("name") for tool in tools if tool.get("type") == "function"]
    return names[0] if names and not answered else None


def _responses(body: dict[str, Any], cite: bool) -> dict[str, Any]:
    question = _question(body)
    prompt = " ".join(m["content"] for m in messages_of(body))
    answered = any(item.get("type") == "function_call_output" for item in body.get("input") or ())
    output: list[dict[str, Any]] = []
    tool = _wants_call(body, answered)
    searching = any(t.get("type") in ("web_search", "web_search_preview") for t in body.get("tools") or ())
    pages = search_pages(question) if searching else []
    text = answer_citing(question, pages) if pages else f"answer to {question}"
    if tool is not None:
        output.append({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": tool,
                       "arguments": json.dumps({"query": question}), "status": "completed"})
        text = ""
    if pages:
        action: dict[str, Any] = {"type": "search", "query": question}
        if "web_search_call.action.sources" in (body.get("include") or ()):
            action["sources"] = [{"type": "url", "url": page.url} for page in pages]
        output.append({"type": "web_search_call", "id": "ws_1", "status": "completed", "action": action})
        output.append({"type": "web_search_call", "id": "ws_2", "status": "completed",
                       "action": {"type": "open_page", "url": pages[0].url}})
    if text:
        annotations = []
        if cite and pages:
            start = text.index(pages[0].snippet)
            annotations.append({"type": "url_citation", "url": pages[0].url, "title": pages[0].title,
                                "start_index": start, "end_index": start + len(pages[0].snippet)})
        output.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": annotations}]})
    input_tokens, output_tokens = _usage_numbers(prompt, text)
    return {
        "id": "resp_1", "object": "response", "model": body.get("model"), "status": "completed", "output": output,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens,
                  "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
                  "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS}},
    }


def _chat(body: dict[str, Any], cite: bool) -> dict[str, Any]:
    question = _question(body)
    prompt = " ".join(m["content"] for m in messages_of(body))
    answered = any(m.get("role") == "tool" for m in body.get("messages") or ())
    tool = _wants_call(body, answered)
    pages = search_pages(question) if "web_search_options" in body else []
    message: dict[str, Any] = {"role": "assistant", "content": answer_citing(question, pages) if pages else f"answer to {question}"}
    if tool is not None:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": json.dumps({"query": question})}}]}
    elif pages and cite:
        text = message["content"]
        message["annotations"] = [
            {"type": "url_citation", "url_citation": {"url": page.url, "title": page.title, "start_index": text.index(page.snippet),
                                                      "end_index": text.index(page.snippet) + len(page.snippet)}}
            for page in pages[:2]
        ]
    prompt_tokens, completion_tokens = _usage_numbers(prompt, message["content"] or "")
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS},
                  "completion_tokens_details": {"reasoning_tokens": REASONING_TOKENS}},
    }


# -- Perplexity --------------------------------------------------------------------------------------------


def perplexity_responder() -> Responder:
    """Perplexity's `/chat/completions`: the answer cites its first two results (`[1]`, `[2]`) of three;
    with `disable_search` it neither searches nor cites."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        question = _question(body)
        prompt = " ".join(m["content"] for m in messages_of(body))
        pages = [] if body.get("disable_search") else search_pages(question)
        text = answer_citing(question, pages[:2]) if pages else f"answer to {question}"
        prompt_tokens, completion_tokens = _usage_numbers(prompt, text)
        answer: dict[str, Any] = {
            "id": "pplx-1", "object": "chat.completion", "model": body.get("model"), "created": 0,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens, "search_context_size": "low",
                      "num_search_queries": 1 if pages else 0, "reasoning_tokens": REASONING_TOKENS},
        }
        if pages:
            answer["citations"] = [page.url for page in pages]
            answer["search_results"] = [{"title": page.title, "url": page.url, "date": page.date,
                                         "last_updated": page.date, "snippet": page.snippet} for page in pages]
        return answer

    return respond


# -- Gemini ----------------------------------------------------------------------------------------------


def gemini_responder() -> Responder:
    """Gemini's `generateContent`: with the Google Search tool, two queries, three grounding chunks (each
    uri a redirect, its title the page's domain, as Gemini gives them) and supports pointing at the first two."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        texts = [part.get("text", "") for content in body.get("contents") or () for part in content.get("parts") or ()]
        question = texts[-1] if texts else ""
        searching = any("googleSearch" in tool or "google_search" in tool for tool in body.get("tools") or ())
        pages = search_pages(question) if searching else []
        text = answer_citing(question, pages[:2]) if pages else f"answer to {question}"
        prompt_tokens, output_tokens = _usage_numbers(" ".join(texts), text)
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": "thinking it over", "thought": True},
                                                                           {"text": text}]},
                                     "finishReason": "STOP", "index": 0}
        if pages:
            candidate["groundingMetadata"] = {
                "webSearchQueries": [question, f"{question} reviews"],
                "groundingChunks": [{"web": {"uri": gemini_redirect(page), "title": page.url.split("/")[2]}} for page in pages],
                "groundingSupports": [
                    {"segment": {"partIndex": 1, "startIndex": text.index(page.snippet),  # part 0 is the thought
                                 "endIndex": text.index(page.snippet) + len(page.snippet), "text": page.snippet},
                     "groundingChunkIndices": [number]}
                    for number, page in enumerate(pages[:2])
                ],
                "searchEntryPoint": {"renderedContent": "<div>search suggestions</div>"},
            }
        return {
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens - REASONING_TOKENS,
                              "thoughtsTokenCount": REASONING_TOKENS, "cachedContentTokenCount": CACHED_TOKENS,
                              "toolUsePromptTokenCount": 10 if pages else 0,
                              "totalTokenCount": prompt_tokens + output_tokens},
            "modelVersion": "gemini-fake",
        }

    return respond


def gemini_redirect(page: Page) -> str:
    """The grounding redirect a fake Gemini gives for a page (real ones expire; these are stable)."""
    return "https://vertexaisearch.cloud.google.com/grounding-api-redirect/" + re.sub(r"[^a-z0-9]+", "-", page.url.lower())


# -- servers -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def serve_provider(responder: Responder, **options: Any) -> Iterator[TestServer]:
    """`server.serve` with `responder`, answering Gemini's route too; `options` as for `serve`."""
    with serve(responder, **options) as server:
        server.paths = (*server.paths, GEMINI_ROUTE)
        yield server


def root_url(server: TestServer) -> str:
    """The server's address without `/v1`: the base URL of Perplexity's API (`/chat/completions`) and of
    Gemini's (the SDK adds `/v1beta/models/...`)."""
    return server.base_url.removesuffix("/v1")
