"""The hosted APIs: each provider's engine, its Batch API, and what the Batch APIs share.

| module | engine or concern |
|---|---|
| `api_backend` | what the `openai:`, `anthropic:` and `perplexity:` backends share: endpoint and key, the HTTP core, retries, one call, the identity's shape |
| `openai_backend` | `openai:MODEL`: any OpenAI-compatible endpoint, with OpenAI's web search and function calling |
| `openai_models` | OpenAI's model families: what a request to each may carry |
| `model_rows` | a row of a provider's model catalogue: the pattern its models' names match, the first row a name matches |
| `openai_session` | OpenAI's session on the HTTP core (`backends.http`): the bearer key, the SDK's error names, `GET /models` |
| `openai_batch` | `openai:MODEL` with `--batch`: OpenAI's Files and Batch APIs |
| `perplexity` | `perplexity:MODEL`: Perplexity's Agent API (`/v1/agent`), which searches by default; model slugs, `preset/NAME`, the retired Sonar names as their documented substitutes |
| `gemini` | `gemini:MODEL`: Google's Gemini API through `google-genai`, with the Google Search tool |
| `anthropic` | `anthropic:MODEL`: Anthropic's Messages API (the SDK's types), with the server web search tool |
| `anthropic_models` | Claude's model families: how each is held to a schema (structured outputs, a forced tool, or lines) |
| `anthropic_batch` | `anthropic:MODEL` with `--batch`: Anthropic's Message Batches |
| `batches` | what every Batch API shares: batch lines, submission, polling, resuming |
| `batch_ledger` | the batches a run submitted, kept in SQLite beside its cache |

Each engine is imported only when it is built (`bespoke_metric.backends.registry`).
"""
