"""Hosted engines that search the web themselves, beyond the OpenAI-compatible API.

| module | engine |
|---|---|
| `perplexity` | `perplexity:MODEL`: Perplexity's chat API (OpenAI-compatible, on the `openai:` transport), which searches by default |
| `gemini` | `gemini:MODEL`: Google's Gemini API through `google-genai`, with the Google Search tool |

Each is imported only when its engine is built (`bespoke_metric.backends.registry`).
"""
