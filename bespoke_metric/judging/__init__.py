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

from .config import ProtocolOptions
from .embed_judge import EmbedJudge
from .factory import make_judge
from .guarded_judge import GuardedJudge
from .guards import check_context_echo, check_response
from .judge import Judge, JudgeItem
from .judges import JudgeKind, register_judge
from .llm_judge import LLMJudge
from .prompts import PROTOCOL_VERSION
from .protocol import RECALL_MODES
from .session import JudgeSession, prepare_response

__all__ = [
    "EmbedJudge", "GuardedJudge", "Judge", "JudgeItem", "JudgeKind", "JudgeSession", "LLMJudge", "ModelAuthor",
    "PROTOCOL_VERSION", "ProtocolOptions", "RECALL_MODES", "check_context_echo", "check_response", "make_judge",
    "prepare_response", "register_judge",
]

# `authoring` (what `bespoke build` asks a model to write) reads the release's YAML: imported on first use
__getattr__, __dir__ = lazy_attributes(__name__, {"ModelAuthor": ".authoring"})
