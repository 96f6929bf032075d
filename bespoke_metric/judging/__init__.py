"""The BESPOKE judging protocol and the judges that apply it.

| module | concern |
|---|---|
| `prompts` | every judge prompt, as whole templates with named placeholders; the protocol version |
| `authoring` | what `bespoke build` asks a model to write: rubrics and atomic claims (versioned apart from the judge) |
| `protocol` | building the judge's requests for a query and a response (pure) |
| `parsing` | reading a judge's answer strictly: the final answer only, ambiguity rejected (pure) |
| `judge` | `Judge` (the class every judge subclasses: `usage`, `close()`, ...), `JudgeItem` and `Prediction`: what every judge is, takes and returns |
| `config` | `JudgeConfig` and `ProtocolOptions`: a judge as configured, its options instances of their classes, checked when made |
| `factory` | `make_judge`: a judge from its config (or spec and keywords), through the engine registry; `plan_judge`, a dry run's |
| `llm_judge` | `LLMJudge`: the protocol over any LLM backend |
| `embed_judge`, `embed_calibration` | the `embed:` proxy judge and its quantile calibration |
| `guards`, `guarded_judge` | cheap checks for degenerate responses, applied in front of any judge |
| `session` | `JudgeSession`, `prepare_response`: one response judged as `generate` + `score` would, from async code |
"""

from bespoke_dataset.lazy import lazy_attributes

# name -> the module that defines it, imported on first use: a wing costs nothing until a name is used
_LAZY: dict[str, str] = {
    "EmbedJudge": ".embed_judge",
    "GuardedJudge": ".guarded_judge",
    "ModelAuthor": ".authoring",
    "Judge": ".judge",
    "JudgeItem": ".judge",
    "JudgeSession": ".session",
    "LLMJudge": ".llm_judge",
    "ProtocolOptions": ".config",
    "make_judge": ".factory",
    "prepare_response": ".session",
    "PROTOCOL_VERSION": ".prompts",
    "RECALL_MODES": ".protocol",
    "check_context_echo": ".guards",
    "check_response": ".guards",
    "strip_reasoning": "bespoke_metric.backends.reasoning",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
