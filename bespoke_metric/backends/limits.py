"""Rate limits and quotas as the providers state them: the limits an account is metered by (`KINDS`), what a call
costs against them (`Cost`), what a user says of their tier (`Tier`), what an answer's headers say (`read_headers`),
and the quota no wait helps (`QuotaExhaustedError`).

Providers meter an account by requests and tokens per minute, and answer what exceeds a limit with a 429;
a refused call counts against the limit too, so resending at once only digs deeper (OpenAI's help center).
What each says of its limits (DESIGN.md, "The providers' limits"):

- OpenAI, on every answer: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset as a duration
  (`1s`, `6m0s`, `20ms`); over a limit a 429 `rate_limit_exceeded` with `retry-after-ms` and `retry-after`. It
  charges a request its prompt's tokens plus the output cap it asks for, and may enforce a per-minute limit over
  shorter periods (60 RPM as one request a second). A spent account is a 429 `insufficient_quota`.
- Anthropic, on every answer: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,
  reset}`, the reset as an RFC 3339 time; a 429 `rate_limit_error` with `retry-after`. A credit balance too low or
  a spend limit reached is a 400 naming it.
- Gemini sends no headers: its 429 `RESOURCE_EXHAUSTED` names the quota (`QuotaFailure`, per minute or per day)
  and the wait (`RetryInfo.retryDelay`); an exhausted daily quota is no wait a run can make.

How calls keep under them is `pacing`'s.
"""

from __future__ import annotations

import datetime
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from .base import EngineError

if TYPE_CHECKING:
    from .base import Request

REQUESTS, TOKENS, INPUT_TOKENS, OUTPUT_TOKENS = "requests", "tokens", "input_tokens", "output_tokens"
KINDS = (REQUESTS, TOKENS, INPUT_TOKENS, OUTPUT_TOKENS)
"""The limits a provider meters: requests; tokens (prompt and output cap together, OpenAI's and Anthropic's
`tokens`); Anthropic's input and output tokens apart."""
MINUTE_S = 60.0
"""What a limit is stated over (RPM, TPM), unless the provider's resets show a shorter window."""
SHORTEST_WINDOW_S = 1.0
"""The shortest period a limit is taken to be enforced over (OpenAI: "60 RPM may be enforced as 1 request per
second")."""
CHARS_PER_TOKEN = 4.0
"""A prompt's tokens, before the provider's own count of them calibrates it (OpenAI's rule of thumb)."""


class QuotaExhaustedError(EngineError):
    """The account can make no more calls until someone acts (OpenAI's `insufficient_quota`, Anthropic's credit
    balance or spend limit, Gemini's daily quota): no wait helps, so the run stops at once. The message is one
    line: the model, the provider's words, what to do; the answers that landed are in the cache, and the same
    command, once the account is topped up, pays only for the rest."""

    def __init__(self, model: str, provider_words: str, remedy: str) -> None:
        self.model = model
        self.provider_words = provider_words
        self.remedy = remedy
        super().__init__(f"{model}: the account's quota is spent: {provider_words}; {remedy}")


@dataclass(frozen=True)
class Tier:
    """What a user says of their account's limits, per minute (None: not said; the provider's headers tell)."""

    rpm: float | None = None
    tpm: float | None = None

    @classmethod
    def of(cls, options: object) -> "Tier":
        """The tier an engine's options give (their `rpm` and `tpm`, where they have them)."""
        return cls(getattr(options, "rpm", None), getattr(options, "tpm", None))

    def per_minute(self) -> dict[str, float]:
        return {kind: value for kind, value in ((REQUESTS, self.rpm), (TOKENS, self.tpm)) if value is not None}


@dataclass(frozen=True)
class Cost:
    """What a call costs against the limits, as the provider counts it: its prompt's tokens (estimated) and the
    output cap it asks for (None: no cap sent, the model's own)."""

    prompt_tokens: int
    output_cap: int | None

    def of(self, kind: str, calibration: float = 1.0) -> float:
        prompt = self.prompt_tokens * calibration
        output = self.output_cap or 0
        return {REQUESTS: 1.0, TOKENS: prompt + output, INPUT_TOKENS: prompt, OUTPUT_TOKENS: float(output)}[kind]

    @classmethod
    def of_request(cls, request: Request, output_cap: int | None) -> "Cost":
        """A request's cost: its messages' (and tools' and schema's) characters as tokens, and `output_cap`."""
        chars = sum(len(str(message.get("content") or "")) for message in request.messages)
        chars += sum(len(str(tool)) for tool in request.tools) + (len(str(request.json_schema)) if request.json_schema else 0)
        return cls(math.ceil(chars / CHARS_PER_TOKEN), output_cap)


@dataclass(frozen=True)
class Reading:
    """One limit as an answer stated it: `limit` per minute, `remaining` now, `reset_s` until it is whole again."""

    kind: str
    limit: float
    remaining: float | None = None
    reset_s: float | None = None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_OPENAI_KINDS = {"requests": REQUESTS, "tokens": TOKENS}
_ANTHROPIC_KINDS = {"requests": REQUESTS, "tokens": TOKENS, "input-tokens": INPUT_TOKENS, "output-tokens": OUTPUT_TOKENS}


def parse_duration(text: str) -> float | None:
    """Seconds of an OpenAI reset (`1s`, `6m0s`, `20ms`, `1h2m3.5s`) or a plain number of seconds; None when unreadable."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def _until(text: str, now: float) -> float | None:
    """Seconds from `now` (epoch) to an RFC 3339 time (Anthropic's resets); None when unreadable."""
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, moment.timestamp() - now)


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def read_headers(headers: Mapping[str, str], now: float | None = None) -> list[Reading]:
    """The limits an answer's headers state, OpenAI's (`x-ratelimit-*`) or Anthropic's (`anthropic-ratelimit-*`);
    none for an answer without them. `now`: the epoch time Anthropic's reset times are read against."""
    lower = {name.lower(): value for name, value in headers.items()}
    found = []
    for prefix, kinds, reset_of in (("x-ratelimit", _OPENAI_KINDS, parse_duration),
                                    ("anthropic-ratelimit", _ANTHROPIC_KINDS,
                                     lambda text: _until(text, time.time() if now is None else now))):
        for name, kind in kinds.items():
            limit = _number(lower.get(f"{prefix}-limit-{name}" if prefix == "x-ratelimit" else f"{prefix}-{name}-limit"))
            if not limit:
                continue
            if prefix == "x-ratelimit":
                remaining, reset = lower.get(f"{prefix}-remaining-{name}"), lower.get(f"{prefix}-reset-{name}")
            else:
                remaining, reset = lower.get(f"{prefix}-{name}-remaining"), lower.get(f"{prefix}-{name}-reset")
            found.append(Reading(kind, limit, _number(remaining), reset_of(reset) if reset else None))
    return found
