"""The BESPOKE judge: protocol, LLM backends, scheduler and cache, scoring, and the `evaluate` metric.

>>> from bespoke_metric import score
>>> results = score("preds.jsonl", "openai:gpt-5", source="yonsei-dli/BESPOKE")  # doctest: +SKIP

`Bespoke` (the `evaluate.Metric`) is imported on first use, so this package works without `evaluate`.
"""

from typing import Any

from .aggregation import by_user, recall_from_verdicts, summarize
from .backends import make_backend
from .backends.hf_backend import HFBackend
from .backends.openai_backend import OpenAIBackend
from .backends.vllm_backend import VLLMBackend
from .backends.base import Backend, CallError, Completion, Request, Usage
from .cache import Cache
from .embed_judge import EmbedJudge
from .parsing import ParseError
from .generation import GenerationError, GenerationReport, GenerationSettings, LLMProfiler, generate
from .judge import DIMENSIONS, METRICS, ItemResult, Judge, JudgeItem
from .judges import JUDGES, make_judge, register_judge
from .leaderboard import build_leaderboard, compare, load_results, render
from .llm_judge import LLMJudge
from .meta_eval import REFERENCE, meta_evaluate
from .metrics import REGISTRY, Metric
from .predictions import Prediction, PredictionError, read_predictions
from .protocol import (
    PROTOCOL_VERSION,
    Judgment,
    batched_recall_request,
    claim_request,
    parse_batched_recall,
    parse_claim_verdict,
    parse_personalization,
    personalization_request,
    repair_request,
)
from .reward import make_reward_fn
from .scheduler import CallResult, run_requests, run_requests_sync
from .scoring import run_judge, score, write_results
from .stats import agreement, bootstrap_ci, paired_bootstrap, paired_permutation, pearson, spearman

__all__ = [
    "GenerationError", "GenerationReport", "GenerationSettings", "LLMProfiler", "generate",
    "Backend", "Bespoke", "Cache", "CallError", "CallResult", "Completion", "DIMENSIONS", "EmbedJudge",
    "HFBackend", "ItemResult", "JUDGES", "Judge", "JudgeItem", "Judgment", "LLMJudge", "METRICS", "Metric",
    "OpenAIBackend", "PROTOCOL_VERSION", "ParseError", "Prediction", "PredictionError", "REFERENCE",
    "REGISTRY", "Request", "Usage", "VLLMBackend", "agreement", "batched_recall_request", "bootstrap_ci",
    "build_leaderboard", "by_user", "claim_request", "compare", "load_results", "make_backend", "make_judge",
    "make_reward_fn", "meta_evaluate", "paired_bootstrap", "paired_permutation", "parse_batched_recall",
    "parse_claim_verdict", "parse_personalization", "pearson", "personalization_request", "read_predictions",
    "recall_from_verdicts", "register_judge", "render", "repair_request", "run_judge", "run_requests",
    "run_requests_sync", "score", "spearman", "summarize", "write_results",
]


def __getattr__(name: str) -> Any:
    if name == "Bespoke":  # needs `evaluate`, an optional dependency
        from .hf_metric import Bespoke

        return Bespoke
    raise AttributeError(f"module 'bespoke_metric' has no attribute {name!r}")
