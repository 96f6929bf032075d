"""Fakes of the providers' APIs, for this project's tests: OpenAI's Responses API and Gemini's (`provider_servers`),
Perplexity's Agent API, Anthropic's Messages API and Message Batches (`anthropic_server`), the Files and Batch APIs
(`batch_server`), and the search APIs (`search_servers`). Each is strict as the real one, on 127.0.0.1, on top of
`bespoke_metric.testing.server` (the OpenAI-compatible test server, which stays in the package for users).

Importable as `fakes.<module>` where the `tests` folder is on the path: under pytest (its `conftest.py` is there),
and from a checkout's root with `PYTHONPATH=tests` (`python -m fakes.batch_server --url-file FILE`).
"""
