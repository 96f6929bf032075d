"""The engines that run a model in this process, and how they find and load its files.

| module | engine or concern |
|---|---|
| `hf_backend` | `hf:MODEL`: batched generation with `transformers` |
| `vllm_backend` | `vllm:MODEL`: offline generation with `vllm.LLM` |
| `worker` | a blocking generation in a worker thread, stopped at once on an interrupt |
| `model_files` | where a model's files are (a folder, the Hub cache, the Hub), decided in seconds |
| `gguf_cache` | a GGUF file read once, kept as Hugging Face folders |
| `encoders` | the one loader of sentence-transformers models (the `embed:` judge, the dense retriever) |

Each engine is imported only when it is built (`bespoke_metric.backends.registry`).
"""
