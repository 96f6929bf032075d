"""How results name their system in tables and legends: `hf:Qwen3-8B (history)`, `searxng agent`.

No I/O here: a `system` block in, a string out.
"""

from __future__ import annotations

from typing import Any, Mapping

from bespoke_metric.backends.registry import model_label, split_spec


def system_label(system: Mapping[str, Any]) -> str | None:
    """A `system` block's display name: `name`, else the model (+ context and search), else None.

    `bespoke run` writes `name` (`hf:Qwen3-8B (history)`); results written before it did record the model
    as a dict (`{"spec": ..., "backend": ...}`). The model is the name given to it (`--model-name`,
    recorded as `model_name`), else its spec, a local file or folder by its own name (`model_label`)."""
    if system.get("name"):
        return str(system["name"])
    model = system.get("model_name") or system.get("model")
    if isinstance(model, Mapping):
        model = model.get("spec") or model.get("model")
    if not model:
        return None
    model = model_label(str(model))
    details = [str(system["context"])] if system.get("context") else []
    if isinstance(system.get("search"), Mapping):
        details.append(search_label(system["search"]))
    return f"{model} ({', '.join(details)})" if details else str(model)


def search_label(search: Mapping[str, Any]) -> str:
    """A run's search in a few words: `native`, `searxng agent`, `tavily, noise 0.7` (engine by name only)."""
    recorded = str(search.get("engine") or "search")
    engine = split_spec(recorded)[0] or recorded  # NAME[:TARGET], read back as a model's spec is: a bare name is itself
    words = engine if search.get("policy") in (None, "query", "native") else f"{engine} {search['policy']}"
    return f"{words}, noise {search['noise']:g}" if search.get("noise") else words
