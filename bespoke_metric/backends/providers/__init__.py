"""Hosted engines that search the web themselves, beyond the OpenAI-compatible API.

| module | engine |
|---|---|
| `perplexity` | `perplexity:MODEL`: Perplexity's Agent API (`/v1/agent`, on the `openai:` transport), which searches by default; model slugs, `preset/NAME`, the retired Sonar names as their documented substitutes |
| `gemini` | `gemini:MODEL`: Google's Gemini API through `google-genai`, with the Google Search tool |
| `anthropic` | `anthropic:MODEL`: Anthropic's Messages API (the SDK's types), with the server web search tool |
| `anthropic_batch` | `anthropic:MODEL` with `--batch`: Anthropic's Message Batches |

Each is imported only when its engine is built (`bespoke_metric.backends.registry`).
"""
