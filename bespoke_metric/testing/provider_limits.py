"""A provider account's rate limits and quota, enforced by the test servers as the providers document them, so
users and tests can rehearse them offline (`serve(..., limits=Limits(rpm=1800))`, `bespoke stand-in --rpm 1800`).

One model for every provider (`Meter`), the answers in each provider's own words (`SHAPES`: `OpenAIShapes`,
`AnthropicShapes`, `GeminiShapes`, chosen by the route a call came to: `provider_of`):

- **Limits per minute** on requests and tokens, each a token bucket refilled continuously at limit/60 per
  second whose capacity is `window_s` seconds' worth (default one second: "a limit may be enforced over
  shorter periods, 60 RPM as 1 request per second", OpenAI's help center). What the headers report is the
  per-minute view: a bucket holding one minute's worth, charged alike, whose level is `remaining` and whose
  time to fill again is `reset` ("the time until the rate limit resets to its initial state", OpenAI's
  rate-limits guide). A refused call still takes its request from the request bucket ("unsuccessful requests
  contribute to your per-minute limit, so continuously resending a request won't work"): a client that
  resends faster than the limit refills never gets through.
- **A call is charged as the provider counts it**: OpenAI its prompt's tokens plus the output cap it asks for
  (`max_tokens`, `max_completion_tokens`, `max_output_tokens`, times `n`); Anthropic input tokens from the
  prompt and output tokens from `max_tokens` at the start (its rate-limits page: OTPM is estimated from
  `max_tokens`); Gemini the prompt's tokens (its input-token quota). Tokens are counted as the servers count
  them in `usage`: words (`count_tokens`).
- **A quota**: after `quota_calls` answered calls (or `quota_dollars` spent at `prices`) the account is
  spent and every call is refused in the provider's words (OpenAI 429 `insufficient_quota`; Anthropic 400
  "Your credit balance is too low", or the spend limit's 400 with `spend_limit=True`; Gemini 429
  `RESOURCE_EXHAUSTED` on its per-day quota), until `Meter.top_up()`.

    with serve(responder, limits=Limits(rpm=1800, tpm=1_800_000, quota_calls=100)) as server:
        ...                          # 429s as OpenAI sends them, x-ratelimit-* headers on every answer
        server.meter.top_up()        # the account paid again
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .bodies import messages_of

Provider = Literal["openai", "anthropic", "gemini"]
Metric = Literal["requests", "tokens", "input-tokens", "output-tokens"]

GEMINI_ROUTE = ":generateContent"
"""How the path of a Gemini call ends (`/v1beta/models/MODEL:generateContent`)."""
MESSAGES_ROUTE = "/v1/messages"
"""Anthropic's Messages API."""


def provider_of(path: str) -> Provider:
    """Whose API a call's path is: Gemini's `generateContent`, Anthropic's Messages, else OpenAI's."""
    route = path.split("?")[0].rstrip("/")
    if route.endswith(GEMINI_ROUTE):
        return "gemini"
    return "anthropic" if route.endswith(MESSAGES_ROUTE) else "openai"


def count_tokens(text: str) -> int:
    """Tokens as the test servers count them in the `usage` they report: words."""
    return len(text.split())


@dataclass(frozen=True)
class Limits:
    """What an account may do, per minute and in all (None: no such limit)."""

    rpm: float | None = None
    """Requests per minute."""
    tpm: float | None = None
    """Tokens per minute: OpenAI's (prompt + output cap), Gemini's input tokens. Anthropic limits input and
    output tokens apart (`input_tpm`, `output_tpm`)."""
    input_tpm: float | None = None
    """Anthropic's input tokens per minute."""
    output_tpm: float | None = None
    """Anthropic's output tokens per minute, charged `max_tokens` when a call starts."""
    window_s: float = 1.0
    """The buckets hold this many seconds of each limit: the burst a client may send at once."""
    quota_calls: int | None = None
    """Calls taken before the account is spent (Gemini: its per-day request quota)."""
    quota_dollars: float | None = None
    """Dollars the answers may cost before the account is spent, at `prices`."""
    prices: tuple[float, float] = (1.25, 10.0)
    """Dollars per million input and output tokens the answers' usage is charged (GPT-5's list prices)."""
    spend_limit: bool = False
    """Anthropic: a spent account is the spend limit the user set, not a credit balance run out."""
    uncapped_output: int = 0
    """Output tokens charged for a call that sets no output cap (no provider documents its rule for one)."""

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "input_tpm", "output_tpm", "quota_dollars"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be above 0 (None: no limit), not {value}")
        if self.quota_calls is not None and self.quota_calls < 0:
            raise ValueError(f"quota_calls must be 0 or more, not {self.quota_calls}")
        if not self.window_s > 0:
            raise ValueError(f"window_s must be above 0, not {self.window_s}")

    def per_minute(self, provider: Provider) -> dict[Metric, float]:
        """The limits a provider's calls meet, by metric (what each provider meters: see the module docstring)."""
        if provider == "anthropic" and self.tpm is not None:
            raise ValueError("Anthropic limits input and output tokens apart: give input_tpm and output_tpm, not tpm")
        if provider != "anthropic" and (self.input_tpm is not None or self.output_tpm is not None):
            raise ValueError(f"{provider} limits tokens in all (tpm), not input_tpm and output_tpm")
        given: dict[Metric, float | None] = {"requests": self.rpm, "tokens": self.tpm, "input-tokens": self.input_tpm,
                                             "output-tokens": self.output_tpm}
        return {metric: limit for metric, limit in given.items() if limit is not None}

    @property
    def metered(self) -> bool:
        """Whether any limit or quota is set."""
        return any(value is not None for value in (self.rpm, self.tpm, self.input_tpm, self.output_tpm,
                                                   self.quota_calls, self.quota_dollars))


@dataclass(frozen=True)
class Charge:
    """What one call costs against the limits, as its provider counts it when the call starts."""

    input_tokens: int
    output_tokens: int
    """The output cap asked for (what the answer may cost, not what it did)."""

    def cost(self, metric: Metric) -> float:
        return {"requests": 1, "tokens": self.input_tokens + self.output_tokens, "input-tokens": self.input_tokens,
                "output-tokens": self.output_tokens}[metric]


def charge_of(provider: Provider, body: Mapping[str, Any], *, uncapped_output: int = 0) -> Charge:
    """The `Charge` of a request body to a provider (see the module docstring)."""
    if provider == "gemini":
        contents = [body.get("systemInstruction") or body.get("system_instruction") or {}, *(body.get("contents") or ())]
        prompt = " ".join(str(part.get("text", "")) for content in contents for part in content.get("parts") or ())
        return Charge(count_tokens(prompt), 0)
    prompt = " ".join(message["content"] for message in messages_of(dict(body)))
    if provider == "anthropic":
        return Charge(count_tokens(prompt), int(body.get("max_tokens") or 0))
    cap = next((body[name] for name in ("max_completion_tokens", "max_tokens", "max_output_tokens")
                if body.get(name) is not None), uncapped_output)
    return Charge(count_tokens(prompt), int(cap) * int(body.get("n") or 1))


def model_of(path: str, body: Mapping[str, Any]) -> str:
    """The model a call asks for: in the body, or in a Gemini call's path (`models/NAME:generateContent`)."""
    if provider_of(path) == "gemini":
        return path.split("?")[0].rsplit("/", 1)[-1].removesuffix(GEMINI_ROUTE)
    return str(body.get("model") or "")


def usage_of(path: str, answer: Mapping[str, Any]) -> tuple[int, int]:
    """The input and output tokens an answer's usage reports, in its provider's fields (0 where it has none)."""
    usage = answer.get("usageMetadata") or answer.get("usage") or {}
    if provider_of(path) == "gemini":
        return (int(usage.get("promptTokenCount") or 0),
                int(usage.get("candidatesTokenCount") or 0) + int(usage.get("thoughtsTokenCount") or 0))
    return (int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
            int(usage.get("completion_tokens") or usage.get("output_tokens") or 0))


class Bucket:
    """A token bucket refilled continuously at `rate` per second up to `capacity`."""

    def __init__(self, capacity: float, rate: float, now: float) -> None:
        self.capacity, self.rate = capacity, rate
        self.level = capacity
        self._at = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate)
        self._at = now

    def wait_for(self, cost: float) -> float:
        """Seconds until the bucket holds `cost` (at most its capacity: a call larger than the bucket goes
        through when it is full, leaving it in debt)."""
        wait = (min(cost, self.capacity) - self.level) / self.rate
        return wait if wait > 1e-9 else 0.0  # a refill's rounding is no wait

    def until_full(self) -> float:
        return max(0.0, (self.capacity - self.level) / self.rate)


class Limit:
    """One per-minute limit: the bucket that enforces it (`window_s` of it) and the per-minute view the
    headers report."""

    def __init__(self, metric: Metric, per_minute: float, window_s: float, now: float) -> None:
        self.metric, self.per_minute = metric, per_minute
        rate = per_minute / 60
        self.enforced = Bucket(max(rate * window_s, 1.0 if metric == "requests" else 0.0), rate, now)
        self.minute = Bucket(per_minute, rate, now)

    def refill(self, now: float) -> None:
        self.enforced.refill(now)
        self.minute.refill(now)

    def take(self, cost: float) -> None:
        self.enforced.level -= cost
        self.minute.level -= cost

    def take_refused(self, cost: float) -> None:
        """A refused call's share: down to empty, never into debt (what refilled since is gone)."""
        for bucket in (self.enforced, self.minute):
            bucket.level = min(bucket.level, max(0.0, bucket.level - cost))

    @property
    def remaining(self) -> int:
        return max(0, math.floor(self.minute.level + 1e-9))  # a refill's rounding is no token less

    @property
    def reset_s(self) -> float:
        return self.minute.until_full()


@dataclass(frozen=True)
class Refusal:
    """Why a call is refused: a limit it would exceed (`limit`; `used` of its minute before the call, `retry_s`
    until the call would fit, None where no wait helps: a call larger than a minute's limit), or the spent
    account (`limit` None)."""

    limit: Limit | None
    cost: float = 0.0
    used: int = 0
    retry_s: float | None = None


@dataclass(frozen=True)
class Answer:
    """What a server sends instead of the call's answer, or besides it: `status` and `body` (a refusal; None
    for an admitted call) and the headers."""

    status: int | None
    body: dict[str, Any] | None
    headers: dict[str, str]


class Meter:
    """The running state of an account's `Limits`: admits or refuses each call, spends the quota, says the
    headers. Thread-safe; `clock` (monotonic seconds) and `now` (the wall clock, for the reset times
    Anthropic writes as dates) are injectable."""

    def __init__(self, limits: Limits, *, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.timezone.utc),
                 organization: str = "org-test") -> None:
        self.limits = limits
        self.clock, self.now = clock, now
        self.organization = organization
        self._lock = threading.Lock()
        self._limits: dict[Provider, dict[Metric, Limit]] = {}
        self.calls_spent = 0
        """Calls admitted against the quota (an admitted call is charged when it starts: no overshoot)."""
        self.dollars_spent = 0.0
        self.refused: list[str] = []
        """The kind of every refusal, in order: a metric (`requests`, `tokens`, ...) or `quota`."""

    def _of(self, provider: Provider, now: float) -> dict[Metric, Limit]:
        found = self._limits.get(provider)
        if found is None:
            found = {metric: Limit(metric, limit, self.limits.window_s, now)
                     for metric, limit in self.limits.per_minute(provider).items()}
            self._limits[provider] = found
        for limit in found.values():
            limit.refill(now)
        return found

    def spent(self) -> bool:
        quota = self.limits
        return ((quota.quota_calls is not None and self.calls_spent >= quota.quota_calls)
                or (quota.quota_dollars is not None and self.dollars_spent >= quota.quota_dollars))

    def top_up(self, *, calls: int | None = None, dollars: float | None = None) -> None:
        """The account paid again: its quota whole, or `calls` (`dollars`) from now where given (the per-minute
        limits are as they were)."""
        with self._lock:
            self.calls_spent, self.dollars_spent = 0, 0.0
            if calls is not None or dollars is not None:
                self.limits = dataclasses.replace(self.limits, quota_calls=calls if calls is not None else self.limits.quota_calls,
                                                  quota_dollars=dollars if dollars is not None else self.limits.quota_dollars)

    def admit(self, path: str, body: Mapping[str, Any], model: str) -> Answer:
        """Admit a call (charging every limit) or refuse it, as its provider answers."""
        provider = provider_of(path)
        shapes = SHAPES[provider]
        charge = charge_of(provider, body, uncapped_output=self.limits.uncapped_output)
        with self._lock:
            limits = self._of(provider, self.clock())
            refusal = self._refusal(limits, charge)
            if refusal is None:
                for limit in limits.values():
                    limit.take(charge.cost(limit.metric))
                self.calls_spent += 1
            else:
                self.refused.append(refusal.limit.metric if refusal.limit is not None else "quota")
            headers = shapes.headers(limits, self.now())
        if refusal is None:
            return Answer(None, None, headers)
        return shapes.refusal(self, refusal, model, headers)

    def answered(self, input_tokens: int, output_tokens: int) -> None:
        """An admitted call's answer, as its usage says: what it spends of a dollar quota."""
        per_input, per_output = self.limits.prices
        with self._lock:
            self.dollars_spent += (input_tokens * per_input + output_tokens * per_output) / 1e6

    def _refusal(self, limits: Mapping[Metric, Limit], charge: Charge) -> Refusal | None:
        """The call's refusal (a rate limit's charging the refused request), or None to admit it."""
        if self.spent():
            return Refusal(None)
        for limit in limits.values():  # a call no wait lets through first
            if charge.cost(limit.metric) > limit.per_minute:
                return Refusal(limit, charge.cost(limit.metric))
        for limit in limits.values():  # requests first: the order the headers list them
            cost = charge.cost(limit.metric)
            used = round(limit.per_minute) - limit.remaining
            if limit.enforced.wait_for(cost) > 0:
                if "requests" in limits:
                    limits["requests"].take_refused(1)
                # the wait told is for every limit, after the refusal took its request
                return Refusal(limit, cost, used, max(other.enforced.wait_for(charge.cost(other.metric))
                                                      for other in limits.values()))
        return None


def state_headers(name: str, shown: Iterable[tuple[str, Limit]], reset: Callable[[float], str]) -> dict[str, str]:
    """Each limit's `limit`, `remaining` and `reset` (written by `reset` from the seconds until it is whole), in
    headers named by `name`'s `{metric}` and `{field}`."""
    headers = {}
    for metric, limit in shown:
        headers[name.format(metric=metric, field="limit")] = str(round(limit.per_minute))
        headers[name.format(metric=metric, field="remaining")] = str(limit.remaining)
        headers[name.format(metric=metric, field="reset")] = reset(limit.reset_s)
    return headers


class Shapes(Protocol):
    """A provider's words: the headers every answer carries, and a refusal's status, body and headers."""

    def headers(self, limits: Mapping[Metric, Limit], now: datetime.datetime) -> dict[str, str]: ...

    def refusal(self, meter: Meter, refusal: Refusal, model: str, headers: dict[str, str]) -> Answer: ...


def go_duration(seconds: float) -> str:
    """A duration as OpenAI's headers write it (Go's `time.Duration`, to the millisecond): `20ms`, `1s`,
    `1.5s`, `6m0s`, `1h2m3s`."""
    ms = math.ceil(seconds * 1000 - 1e-9)
    if ms <= 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    text = f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


# -- the providers' words --------------------------------------------------------------------------------


class OpenAIShapes:
    """OpenAI's headers and 429 bodies. Headers: platform.openai.com/docs/guides/rate-limits ("Rate limits in
    headers": `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the resets as durations such as `1s`,
    `6m0s`); the 429 body as the API sends it, `{"error": {message, type, param, code}}` (openai-python's
    `RateLimitError` reads `code` and `type` off it: openai/_exceptions.py `APIError.__init__`), its message as
    quoted in the help center and in openai-python issues ("Rate limit reached for gpt-4 in organization
    org-... on tokens per min (TPM): Limit 10000, Used 9800, Requested 500. Please try again in 1.8s. Visit
    https://platform.openai.com/account/rate-limits to learn more."); a call larger than the limit ("Request
    too large for ... The input or output tokens must be reduced in order to run successfully."); the spent
    account's `insufficient_quota` (platform.openai.com/docs/guides/error-codes, "429 - You exceeded your
    current quota"). `retry-after-ms` and `retry-after` as openai-python's `_parse_retry_after_header` reads
    them (openai/_base_client.py)."""

    NAMES: Mapping[str, str] = {"requests": "requests per min (RPM)", "tokens": "tokens per min (TPM)"}

    @staticmethod
    def headers(limits: Mapping[Metric, Limit], now: datetime.datetime) -> dict[str, str]:
        return state_headers("x-ratelimit-{field}-{metric}", limits.items(), go_duration)

    def refusal(self, meter: Meter, refusal: Refusal, model: str, headers: dict[str, str]) -> Answer:
        if refusal.limit is None:
            return Answer(429, openai_error(QUOTA_MESSAGE, "insufficient_quota", "insufficient_quota"), headers)
        limit = refusal.limit
        where = f"for {model} in organization {meter.organization} on {self.NAMES[limit.metric]}"
        if refusal.retry_s is None:
            message = (f"Request too large {where}: Limit {round(limit.per_minute)}, Requested {round(refusal.cost)}. "
                       "The input or output tokens must be reduced in order to run successfully. Visit "
                       "https://platform.openai.com/account/rate-limits to learn more.")
            return Answer(429, openai_error(message, limit.metric, "rate_limit_exceeded"), headers)
        message = (f"Rate limit reached {where}: Limit {round(limit.per_minute)}, Used {refusal.used}, Requested "
                   f"{round(refusal.cost)}. Please try again in {go_duration(refusal.retry_s)}. Visit "
                   "https://platform.openai.com/account/rate-limits to learn more.")
        wait_ms = max(1, math.ceil(refusal.retry_s * 1000))
        return Answer(429, openai_error(message, limit.metric, "rate_limit_exceeded"),
                      {**headers, "retry-after-ms": str(wait_ms), "retry-after": str(math.ceil(wait_ms / 1000))})


QUOTA_MESSAGE = ("You exceeded your current quota, please check your plan and billing details. For more information on "
                 "this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
"""OpenAI's words for a spent account (429 `insufficient_quota`)."""


def openai_error(message: str, kind: str, code: str) -> dict[str, Any]:
    """OpenAI's error body."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class AnthropicShapes:
    """Anthropic's headers and errors (docs.claude.com/en/api/rate-limits, "Response headers": `anthropic-ratelimit-
    {requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`, the resets as RFC 3339 times "when the
    rate limit will be fully replenished", the `tokens` ones those of the token limit with the fewest left;
    `retry-after` in seconds on a 429), the error body the SDK's `ErrorResponse` (anthropic/types/shared/
    error_response.py: `{type: "error", error: {type, message}, request_id}`), the 429 `rate_limit_error`'s
    message as the API words it ("This request would exceed the rate limit for your organization (...) of 50
    input tokens per minute. ..."); a spent account a 400 `invalid_request_error`: the credit balance ("Your
    credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase
    credits.", docs.claude.com/en/api/errors) or the spend limit the user set ("You have reached your specified
    API usage limits. You will regain access on YYYY-MM-DD at 00:00 UTC.", the first of the next month)."""

    NAMES: Mapping[str, str] = {"requests": "requests", "input-tokens": "input tokens", "output-tokens": "output tokens"}

    @staticmethod
    def headers(limits: Mapping[Metric, Limit], now: datetime.datetime) -> dict[str, str]:
        def at(seconds: float) -> str:
            return (now + datetime.timedelta(seconds=math.ceil(seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")

        tokens = [limit for metric, limit in limits.items() if metric != "requests"]
        shown: list[tuple[str, Limit]] = [(metric, limit) for metric, limit in limits.items()]
        if tokens:
            shown.append(("tokens", min(tokens, key=lambda limit: limit.remaining)))
        return state_headers("anthropic-ratelimit-{metric}-{field}", shown, at)

    def refusal(self, meter: Meter, refusal: Refusal, model: str, headers: dict[str, str]) -> Answer:
        if refusal.limit is None:
            if meter.limits.spend_limit:
                today = meter.now().date()
                regain = (today.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)
                message = (f"You have reached your specified API usage limits. You will regain access on "
                           f"{regain.isoformat()} at 00:00 UTC.")
            else:
                message = CREDIT_MESSAGE
            return Answer(400, anthropic_error("invalid_request_error", message), headers)
        limit = refusal.limit
        message = (f"This request would exceed the rate limit for your organization ({meter.organization}) of "
                   f"{round(limit.per_minute)} {self.NAMES[limit.metric]} per minute. For details, refer to: "
                   "https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. "
                   "Please reduce the prompt length or the maximum tokens requested, or try again later. You may also "
                   "contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit "
                   "increase.")
        wait = {} if refusal.retry_s is None else {"retry-after": str(max(1, math.ceil(refusal.retry_s)))}
        return Answer(429, anthropic_error("rate_limit_error", message), {**headers, **wait})


CREDIT_MESSAGE = ("Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade "
                  "or purchase credits.")
"""Anthropic's words for a spent credit balance (400 `invalid_request_error`)."""


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's `ErrorResponse` (anthropic/types/shared/error_response.py)."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}


class GeminiShapes:
    """Gemini's 429 `RESOURCE_EXHAUSTED`, a `google.rpc.Status` whose `details` say which quota (`QuotaFailure`),
    where to read about it (`Help`) and, for a per-minute quota, how long to wait (`RetryInfo.retryDelay`, whole
    seconds as Gemini writes it). Shapes as users quote them from the Gemini API: RooCodeInc/Roo-Code#3883
    (2025-06, the three details, `quotaValue`, retryDelay "26s"), googleapis/python-genai#2044 (the per-day
    `GenerateRequestsPerDayPerProjectPerModel-FreeTier` beside the per-minute ones), gke-labs/gemini-for-kubernetes-
    development#1215 (2026-07, the message's "To monitor your current usage" sentence; a spent daily quota "only
    resets midnight"); google-genai reads `code`, `status`, `message` off the body and keeps it whole as
    `details` (google/genai/errors.py `APIError.__init__`). Gemini sends no rate-limit headers on an answer."""

    QUOTAS: Mapping[str, tuple[str, str]] = {
        "requests": ("generate_content_free_tier_requests", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        "tokens": ("generate_content_free_tier_input_token_count", "GenerateContentInputTokensPerModelPerMinute-FreeTier"),
        "quota": ("generate_content_free_tier_requests", "GenerateRequestsPerDayPerProjectPerModel-FreeTier"),
    }
    MESSAGE = ("You exceeded your current quota, please check your plan and billing details. For more information on "
               "this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, "
               "head to: https://ai.dev/rate-limit. ")

    @staticmethod
    def headers(limits: Mapping[Metric, Limit], now: datetime.datetime) -> dict[str, str]:
        return {}

    def refusal(self, meter: Meter, refusal: Refusal, model: str, headers: dict[str, str]) -> Answer:
        if refusal.limit is None:
            which, value = "quota", meter.limits.quota_calls
        else:
            which, value = refusal.limit.metric, round(refusal.limit.per_minute)
        metric, quota = self.QUOTAS[which]
        details: list[dict[str, Any]] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaMetric": f"generativelanguage.googleapis.com/{metric}", "quotaId": quota,
                 "quotaDimensions": {"location": "global", "model": model}, "quotaValue": str(value)}]},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [
                {"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        ]
        if refusal.retry_s is not None:
            details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                            "retryDelay": f"{max(1, math.ceil(refusal.retry_s))}s"})
        return Answer(429, {"error": {"code": 429, "message": self.MESSAGE, "status": "RESOURCE_EXHAUSTED",
                                      "details": details}}, headers)


SHAPES: dict[Provider, Shapes] = {"openai": OpenAIShapes(), "anthropic": AnthropicShapes(), "gemini": GeminiShapes()}
"""Each provider's words."""
