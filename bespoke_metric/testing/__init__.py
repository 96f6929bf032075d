"""Public testing utilities: what this project's tests and the documentation's examples run against,
offline and on a CPU, and what your own tests can use.

| module | what it gives |
|---|---|
| `server` | `serve()`: an OpenAI-compatible HTTP server on 127.0.0.1, with latency and scripted faults |
| `judge_responder` | `judge_answer`: a deterministic stand-in judge for the server |
| `system_responder` | `system_answer`, `answer_any`: a stand-in system model and profiler beside it |
| `tiny_model` | `build_tiny_model`: a tiny random Llama with a real tokenizer and chat template |
| `doubles` | recording doubles of a backend and a judge |
| `browser` | headless Chromium for the Spaces' apps |
| `degenerate` | degenerate completions, for checking the reward's guards |
"""
