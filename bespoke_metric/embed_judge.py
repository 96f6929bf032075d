"""`embed:MODEL`, a fast offline proxy judge: sentence embeddings instead of an LLM.

- Dimension scores: the query's R-J examples (the human-scored shots) nearest to the response in
  embedding space vote with their human scores, weighted by a softmax of cosine similarity; the
  weighted mean is rounded to an integer 1-5. The feedback names the neighbours, their similarity,
  weight and score.
- Recall: a gold claim counts as conveyed when some sentence of the response has cosine similarity
  >= `threshold` with it; the best sentence and its similarity are recorded per claim.

It runs on CPU in seconds and needs no API, for inner loops (a training reward, a quick check). It is
a proxy: `proxy = True`, and the leaderboard refuses its results unless told otherwise. How far it is
from the LLM judge is what `bespoke meta-eval --judge embed:...` measures.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .backends.base import Usage
from .encoders import DEFAULT_ENCODER, encoder_name, load_encoder
from bespoke_dataset.vocabulary import DIMENSIONS

from .judge import JudgeItem
from .progress import ProgressBar, ProgressHook
from .results import ItemResult

EMBED_PROTOCOL_VERSION = "embed-1"
"""Version of this judge's method; results of different versions are never ranked together."""

ENCODE_CHUNK = 256
"""Texts encoded between two progress updates (and two chances to stop)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences and list items of a response, markdown bullets stripped, empties dropped."""
    # bullets first, line by line: "1. First point." must not split after "1."
    lines = (_BULLET.sub("", line) for line in text.splitlines())
    pieces = (piece.strip() for line in lines for piece in _SENTENCE_END.split(line))
    return [piece for piece in pieces if piece]


@dataclass
class EmbedItemResult(ItemResult):
    claim_matches: list[dict[str, Any]] = field(default_factory=list)
    """Per gold claim: `claim`, best response `sentence` (None for an empty response), `similarity`,
    `conveyed` (similarity >= threshold) and the `threshold` used."""

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "claim_matches": list(self.claim_matches)}


class EmbedJudge:
    """Nearest-neighbour scoring against the human-scored examples; claim recall by sentence similarity."""

    proxy = True

    def __init__(
        self,
        model: str = DEFAULT_ENCODER,
        *,
        spec: str | None = None,
        k: int = 3,
        temperature: float = 0.02,
        threshold: float = 0.7,
        max_shots: int = 5,
        device: str = "cpu",
        batch_size: int = 64,
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
        if max_shots < 1:
            raise ValueError(f"the embed judge needs at least one R-J example per query, got max_shots={max_shots}")
        self.encoder, self.model = model, encoder_name(model)
        self.spec = spec or f"embed:{model}"
        self.k = k
        self.temperature = temperature
        self.threshold = threshold
        self.max_shots = max_shots
        self.device = device
        self.batch_size = batch_size
        self.usage = Usage(extra={"texts_encoded": 0})
        """No LLM calls: `extra["texts_encoded"]` counts the work done."""

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "backend": "embed",
            "model": self.model,
            "k": self.k,
            "temperature": self.temperature,
            "threshold": self.threshold,
            "max_shots": self.max_shots,
            "protocol_version": EMBED_PROTOCOL_VERSION,
            "proxy": self.proxy,
        }

    def embed(
        self, texts: Sequence[str], progress: ProgressHook | None = None, stop: threading.Event | None = None
    ) -> dict[str, np.ndarray]:
        """Unit-normalised embeddings of the distinct texts, keyed by text (dot product = cosine), encoded
        a chunk at a time: each chunk is reported to `progress`, and a set `stop` ends the work between two."""
        unique = list(dict.fromkeys(texts))
        vectors: dict[str, np.ndarray] = {}
        if not unique:
            return vectors
        encoder = load_encoder(self.encoder, self.device)
        for start in range(0, len(unique), ENCODE_CHUNK):
            if stop is not None and stop.is_set():
                raise asyncio.CancelledError("embedding stopped")
            chunk = unique[start : start + ENCODE_CHUNK]
            encoded = encoder.encode(chunk, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            vectors.update(zip(chunk, encoded))
            self.usage.extra["texts_encoded"] += len(chunk)
            if progress is not None:
                progress("done", len(chunk))
        return vectors

    async def judge(self, items: list[JudgeItem], progress: ProgressHook | None = None) -> list[ItemResult]:
        # Encoding is CPU-bound and synchronous: it runs on a worker thread, keeping the event loop free for
        # whoever else runs on it; when this task is cancelled (Ctrl-C) the worker stops after its chunk.
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self.judge_sync, items, progress, stop)
        finally:
            stop.set()

    def judge_sync(
        self, items: Sequence[JudgeItem], progress: ProgressHook | None = None, stop: threading.Event | None = None
    ) -> list[EmbedItemResult]:
        """Judge every item with one encoding pass over all distinct texts of the batch. Progress (texts
        encoded) goes to `progress`, or without one to a bar on a terminal."""
        start = time.perf_counter()
        sentences = [split_sentences(item.response) for item in items]
        texts: list[str] = []
        for item, item_sentences in zip(items, sentences):
            texts += [item.response] + [shot["response"] for shot in item.row["shots"][: self.max_shots]]
            texts += list(item.row["claims"]) + item_sentences
        with ProgressBar(len(set(texts)), desc="embedding", unit="text", disable=progress is not None) as bar:
            vectors = self.embed(texts, progress or bar, stop)
        results = [self._judge_one(item, item_sentences, vectors) for item, item_sentences in zip(items, sentences)]
        self.usage.wall_seconds += time.perf_counter() - start
        return results

    def _judge_one(self, item: JudgeItem, sentences: list[str], vectors: dict[str, np.ndarray]) -> EmbedItemResult:
        result = EmbedItemResult(str(item.row["user"]), str(item.row["query_id"]))
        shots = list(item.row["shots"][: self.max_shots])
        if shots:
            self._score(result, item.response, shots, vectors)
        else:
            result.errors += [{"metric": d, "reason": "the query has no R-J examples to compare with"} for d in DIMENSIONS]
        self._recall(result, list(item.row["claims"]), sentences, vectors)
        return result

    def _score(self, result: EmbedItemResult, response: str, shots: list[dict[str, Any]], vectors: dict[str, np.ndarray]) -> None:
        similarity = np.array([vectors[shot["response"]] @ vectors[response] for shot in shots])
        nearest = np.argsort(-similarity, kind="stable")[: self.k]
        logits = similarity[nearest] / self.temperature
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        for dimension in DIMENSIONS:
            votes = [(w, shots[i][dimension]["score"]) for w, i in zip(weights, nearest) if shots[i][dimension]["score"] is not None]
            if not votes:
                result.errors.append({"metric": dimension, "reason": "no neighbouring example has a human score"})
                continue
            total = sum(w for w, _ in votes)
            value = sum(w * score for w, score in votes) / total
            result.scores[dimension] = min(5, max(1, math.floor(value + 0.5)))  # half up, not to even
            neighbours = ", ".join(
                f"example {i + 1} (cosine {similarity[i]:.3f}, weight {w:.2f}, human score {shots[i][dimension]['score']})"
                for w, i in zip(weights, nearest)
            )
            result.feedback[dimension] = (
                f"Proxy score {value:.2f} -> {result.scores[dimension]}: similarity-weighted human scores of the "
                f"{len(nearest)} nearest of {len(shots)} R-J examples: {neighbours}."
            )

    def _recall(self, result: EmbedItemResult, claims: list[str], sentences: list[str], vectors: dict[str, np.ndarray]) -> None:
        if not claims:
            result.errors.append({"metric": "recall", "reason": "the query has no gold claims"})
            return
        matrix = np.array([vectors[s] for s in sentences]) if sentences else None
        for claim in claims:
            if matrix is None:  # an empty response conveys nothing: a judged False, not a failure
                match = {"claim": claim, "sentence": None, "similarity": None, "conveyed": False, "threshold": self.threshold}
            else:
                similarity = matrix @ vectors[claim]
                best = int(np.argmax(similarity))
                conveyed = bool(similarity[best] >= self.threshold)
                match = {"claim": claim, "sentence": sentences[best], "similarity": round(float(similarity[best]), 4),
                         "conveyed": conveyed, "threshold": self.threshold}
            result.claim_matches.append(match)
            result.claim_verdicts.append(match["conveyed"])
        result.matched_claims = [m["claim"] for m in result.claim_matches if m["conveyed"]]
        result.recall = len(result.matched_claims) / len(claims)


_OPTIONS = ("k", "temperature", "threshold", "max_shots", "device", "batch_size")


def make_embed_judge(spec: str, **options: Any) -> EmbedJudge:
    """The `embed` entry of the judge registry: `embed:MODEL` with the options of `EmbedJudge`."""
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"the embed judge does not take {', '.join(unknown)}; its options are {', '.join(_OPTIONS)}")
    return EmbedJudge(spec.partition(":")[2] or DEFAULT_ENCODER, spec=spec, **options)
