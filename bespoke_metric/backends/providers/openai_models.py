"""OpenAI's model families as the API takes them on 2026-12-04: one row per family, the first that matches
a model name wins. Pure.

A row says what a request to a model of the family may carry, so that nothing the API would refuse is
sent: the output cap's name on chat completions (the Responses API always takes `max_output_tokens`),
whether it reasons first, the `reasoning.effort` values it takes, when it takes the sampling parameters
(`temperature`, `top_p`, `logprobs`), and whether it calls tools (web search included) on chat
completions. The sources are each row's `source`: OpenAI's model pages and deprecations page, and the
parameter errors its API answers with (`Unsupported parameter: 'max_tokens' ... Use
'max_completion_tokens' instead.`, `Unsupported value: 'temperature' does not support 0 with this model.`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .model_rows import ModelRow, first_match

SAMPLING_PARAMETERS = ("temperature", "top_p", "logprobs")
"""The parameters a reasoning model takes only where its family says (`Family.sampling`)."""

Sampling = Literal["always", "never", "effort-none"]
"""When a family takes `SAMPLING_PARAMETERS`: always (a chat model), never (o-series, GPT-5), or only at
reasoning effort `none` (GPT-5.1 and later, GPT-6)."""


@dataclass(frozen=True)
class Family(ModelRow):
    """What the API takes from the models of one family."""

    chat_token_parameter: str
    """The output cap's name on chat completions: `max_completion_tokens` or `max_tokens`."""
    reasoning: bool = False
    """Reasons before it answers: the Responses API by default, `reasoning.effort` ("high" unless given),
    and no output cap from the request (its hidden reasoning would starve under it)."""
    efforts: tuple[str, ...] | None = None
    """The `reasoning.effort` values it takes; None: not known here (any the SDK names is sent)."""
    sampling: Sampling = "always"
    chat_tools: bool = True
    """Calls tools, web search included, on chat completions; False: only on the Responses API."""
    chat_search: bool = False
    """A search model: searches through chat completions (`web_search_options`), not with the tool."""
    source: str = ""

    def takes_sampling(self, effort: str | None) -> bool:
        """Whether a request at reasoning effort `effort` may carry `SAMPLING_PARAMETERS`."""
        return self.sampling == "always" or (self.sampling == "effort-none" and effort == "none")


_MODELS_PAGE = "platform.openai.com/docs/models (as read 2026-12-01)"
_GPT6_GUIDE = ("OpenAI's GPT-6 model pages as issue 32 quotes them (2026-12-01): tool calling, web search included, on the Responses API only from GPT-6.1; "
               "temperature, top_p and logprobs only at reasoning effort none; GPT-6.2 refuses efforts none and minimal")

_SOL_PAGE = ("OpenAI's GPT-6.1 Sol model page (as read 2026-12-04): efforts low, medium (default), high, xhigh, max, "
             "not none or minimal (so no temperature, top_p or logprobs); no function calling on chat completions")

FAMILIES: tuple[Family, ...] = (
    Family("chat-completions search (GPT-5)", r"gpt-5[\w.-]*-search-api", "max_completion_tokens", sampling="never",
           chat_search=True, source="platform.openai.com/docs/models/gpt-5-search-api: no sampling parameters"),
    Family("chat-completions search", r"[\w.-]*-search-(?:preview|api)\b", "max_tokens", sampling="never",
           chat_search=True, source="platform.openai.com/docs/guides/tools-web-search: search models take no temperature"),
    Family("GPT-6.2 and later", r"gpt-6\.(?:[2-9]|\d{2,})", "max_completion_tokens", reasoning=True,
           efforts=("low", "medium", "high", "xhigh", "max"), sampling="effort-none", chat_tools=False, source=_GPT6_GUIDE),
    Family("GPT-6.1 Sol", r"gpt-6\.1-sol\b", "max_completion_tokens", reasoning=True,
           efforts=("low", "medium", "high", "xhigh", "max"), sampling="effort-none", chat_tools=False, source=_SOL_PAGE),
    Family("GPT-6.1", r"gpt-6\.1(?!\d)", "max_completion_tokens", reasoning=True, sampling="effort-none",
           chat_tools=False, source=_GPT6_GUIDE),
    Family("GPT-6", r"gpt-6(?![.\d])", "max_completion_tokens", reasoning=True, sampling="effort-none",
           source=_GPT6_GUIDE),
    Family("GPT-5 chat", r"gpt-5(?:\.\d+)?-chat", "max_completion_tokens", source=_MODELS_PAGE),
    Family("GPT-5.2 and later", r"gpt-5\.(?:[2-9]|\d{2,})", "max_completion_tokens", reasoning=True,
           efforts=("none", "low", "medium", "high", "xhigh"), sampling="effort-none",
           source="platform.openai.com/docs/guides/latest-model (GPT-5.2): efforts none to xhigh; "
                  "temperature, top_p, logprobs only at effort none"),
    Family("GPT-5.1", r"gpt-5\.1(?!\d)", "max_completion_tokens", reasoning=True,
           efforts=("none", "low", "medium", "high"), sampling="effort-none",
           source="platform.openai.com/docs/guides/latest-model (GPT-5.1): efforts none to high; "
                  "temperature, top_p, logprobs only at effort none"),
    Family("GPT-5", r"gpt-5(?![.\d])", "max_completion_tokens", reasoning=True,
           efforts=("minimal", "low", "medium", "high"), sampling="never",
           source="platform.openai.com/docs/guides/reasoning (GPT-5): efforts minimal to high; no sampling parameters"),
    Family("o-series", r"o\d+(?:-|$)", "max_completion_tokens", reasoning=True, efforts=("low", "medium", "high"),
           sampling="never", source="platform.openai.com/docs/guides/reasoning (o1, o3, o4-mini): efforts low to high"),
)
"""OpenAI's families, most specific first; a model none matches is `OTHER` (another server's model too)."""

OTHER = Family("other", r"", "max_tokens", source="any other model or server: chat completions' own max_tokens")
"""Every other model: a chat model that takes `max_tokens` and temperature, as other servers read them."""


def family_of(model: str) -> Family:
    """The family of `model` (`FAMILIES`, else `OTHER`)."""
    return first_match(FAMILIES, model, OTHER)
