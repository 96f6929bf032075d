"""`embed:MODEL`, a fast offline proxy judge: sentence embeddings instead of an LLM.

- Dimension scores: the query's R-J examples (the human-scored shots) nearest to the response in
  embedding space vote with their human scores, weighted by a softmax of cosine similarity; the
  weighted mean is calibrated onto the humans' 1-5 scale (`embed_calibration`: a quantile map fitted on
  the R-J examples, so 1 and 5 are given as often as people give them) and rounded. The feedback names
  the neighbours, their similarity, weight and score, and the raw and calibrated values.
- Calibration: `calibrate(rows)` fits the maps on every R-J example of those benchmark rows. `score` (any
  `--limit`), the metric, the reward and the frameworks' tasks (`judging.session`) all calibrate it on the
  whole benchmark, so an item's scores never depend on which other items are judged with it; a judge never
  calibrated fits them on the rows of the batch it is given. `calibration_check()` measures the calibrated
  proxy by leave-one-query-out on those examples.
- Recall: a gold claim counts as conveyed when some sentence of the response has cosine similarity
  >= `threshold` with it; the best sentence and its similarity are recorded per claim.
- Memory: a judge keeps the vectors of the benchmark's own texts it has encoded (R-J example responses,
  gold claims), so a later batch (a training reward's next step, `calibrate` then a batch) encodes only
  its responses and their sentences. The benchmark bounds it; responses are never kept.

It runs on CPU in seconds and needs no API, for inner loops (a training reward, a quick check). It is
a proxy: `proxy = True`, and the leaderboard refuses its results unless told otherwise. How far it is
from the LLM judge is what `bespoke meta-eval --judge embed:...` measures.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from itertools import chain
from typing import Any, Mapping, Sequence

import numpy as np

from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.backends.base import Usage
from bespoke_metric.backends.local.encoders import DEFAULT_ENCODER, encoder_name, load_encoder
from bespoke_metric.backends.options import given
from bespoke_metric.calls.progress import ProgressBar, ProgressHook
from bespoke_metric.results import ItemResult, stats

from .embed_calibration import CALIBRATION_METHOD, Pair, QuantileMap, example_pairs, fit_maps, knn_vote, leave_one_query_out, to_score
from .judge import Judge, JudgeItem

EMBED_PROTOCOL_VERSION = "embed-2"
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


class EmbedJudge(Judge):
    """Nearest-neighbour scoring against the human-scored examples; claim recall by sentence similarity."""

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
            raise UserError(f"k must be >= 1, got {k}")
        if temperature <= 0:
            raise UserError(f"temperature must be > 0, got {temperature}")
        if not -1.0 <= threshold <= 1.0:
            raise UserError(f"threshold is a cosine similarity in [-1, 1], got {threshold}")
        if max_shots < 1:
            raise UserError(f"the embed judge needs at least one R-J example per query, got --max-shots {max_shots}")
        # No LLM calls: `usage.extra["texts_encoded"]` counts the work done.
        super().__init__(spec or f"embed:{model}", proxy=True, usage=Usage(extra={"texts_encoded": 0}))
        self.encoder, self.model = model, encoder_name(model)
        self.k = k
        self.temperature = temperature
        self.threshold = threshold
        self.max_shots = max_shots
        self.device = device
        self.batch_size = batch_size
        self.calibration: dict[str, QuantileMap] | None = None
        self.calibration_pairs: list[Pair] = []
        self._remembered: dict[str, np.ndarray] = {}
        """Vectors of the benchmark texts encoded so far (examples, claims), keyed by text: the same at every
        batch, so each is encoded once per judge."""

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "backend": "embed",
            "model": self.model,
            "k": self.k,
            "temperature": self.temperature,
            "threshold": self.threshold,
            "max_shots": self.max_shots,
            "calibration": CALIBRATION_METHOD,
            "protocol_version": EMBED_PROTOCOL_VERSION,
            "proxy": self.proxy,
        }

    def embed(
        self, texts: Sequence[str], progress: ProgressHook | None = None, stop: threading.Event | None = None,
        *, remember: bool = False,
    ) -> dict[str, np.ndarray]:
        """Unit-normalised embeddings of the distinct texts, keyed by text (dot product = cosine). Texts the judge
        remembers are taken from its memory; the others are encoded a chunk at a time: each chunk is reported to
        `progress`, and a set `stop` ends the work between two. `remember=True` (the benchmark's own texts,
        never responses) remembers what was encoded."""
        unique = list(dict.fromkeys(texts))
        vectors = {text: self._remembered[text] for text in unique if text in self._remembered}
        missing = [text for text in unique if text not in vectors]
        if not missing:
            return vectors
        encoder = load_encoder(self.encoder, self.device)
        for start in range(0, len(missing), ENCODE_CHUNK):
            if stop is not None and stop.is_set():
                raise asyncio.CancelledError("embedding stopped")
            chunk = missing[start : start + ENCODE_CHUNK]
            encoded = dict(zip(chunk, encoder.encode(chunk, batch_size=self.batch_size, normalize_embeddings=True,
                                                     convert_to_numpy=True, show_progress_bar=False), strict=True))
            vectors.update(encoded)
            if remember:
                self._remembered.update(encoded)
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

    def calibrate(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Fit the calibration on every R-J example of `rows` (benchmark rows)."""
        rows = list(rows)
        vectors = self.embed([shot["response"] for row in rows for shot in row["shots"][: self.max_shots]], remember=True)
        self._fit(rows, vectors)

    def _fit(self, rows: Sequence[Mapping[str, Any]], vectors: Mapping[str, np.ndarray]) -> None:
        self.calibration_pairs = example_pairs(rows, vectors, k=self.k, temperature=self.temperature, max_shots=self.max_shots)
        self.calibration = fit_maps(self.calibration_pairs)

    def calibration_check(self, *, n_resamples: int = stats.DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, Any]:
        """Leave-one-query-out agreement of the calibrated (and raw) proxy with the humans on the R-J
        examples it was calibrated on (see `embed_calibration.leave_one_query_out`)."""
        if self.calibration is None:
            raise UserError("the embed judge has not been calibrated yet: judge a batch or call calibrate(rows)")
        return leave_one_query_out(self.calibration_pairs, n_resamples=n_resamples, seed=seed)

    def judge_sync(
        self, items: Sequence[JudgeItem], progress: ProgressHook | None = None, stop: threading.Event | None = None
    ) -> list[ItemResult]:
        """Judge every item, encoding once each distinct text of the batch that the judge does not remember:
        the benchmark's texts (examples, claims) in one pass, remembered, then the responses and their
        sentences in another. Progress (texts encoded) goes to `progress`, or without one to a bar on a terminal."""
        start = time.perf_counter()
        sentences = [split_sentences(item.response) for item in items]
        benchmark_texts = [[shot["response"] for shot in item.row["shots"][: self.max_shots]] + list(item.row["claims"])
                           for item in items]
        response_texts = [[item.response, *item_sentences] for item, item_sentences in zip(items, sentences, strict=True)]
        uncounted = {text for item_texts in benchmark_texts + response_texts for text in item_texts
                     if text not in self._remembered}  # what this batch encodes
        with ProgressBar(len(uncounted), desc="embedding", unit="text", disable=progress is not None) as bar:
            # the benchmark's texts first, remembered: a response that is one of them is then taken from memory
            vectors = self.embed(list(chain.from_iterable(benchmark_texts)), progress or bar, stop, remember=True)
            vectors.update(self.embed(list(chain.from_iterable(response_texts)), progress or bar, stop))
        if self.calibration is None:
            rows = {query_key(item.row["user"], item.row["query_id"]): item.row for item in items}
            self._fit(list(rows.values()), vectors)
        results = [self._judge_one(item, item_sentences, vectors) for item, item_sentences in zip(items, sentences, strict=True)]
        for result, item_benchmark, item_response in zip(results, benchmark_texts, response_texts, strict=True):
            new = uncounted.intersection(item_benchmark + item_response)  # a text shared by items counts for the first
            uncounted -= new
            result.usage = Usage(extra={"texts_encoded": len(new)})
        self.usage.wall_seconds += time.perf_counter() - start
        return results

    def _judge_one(self, item: JudgeItem, sentences: list[str], vectors: dict[str, np.ndarray]) -> ItemResult:
        result = ItemResult(str(item.row["user"]), str(item.row["query_id"]))
        shots = list(item.row["shots"][: self.max_shots])
        if shots:
            self._score(result, item.response, shots, vectors)
        else:
            result.errors += [{"metric": d, "reason": "the query has no R-J examples to compare with"} for d in DIMENSIONS]
        self._recall(result, list(item.row["claims"]), sentences, vectors)
        return result

    def _score(self, result: ItemResult, response: str, shots: list[dict[str, Any]], vectors: dict[str, np.ndarray]) -> None:
        similarity = np.array([vectors[shot["response"]] @ vectors[response] for shot in shots])
        for dimension in DIMENSIONS:
            vote = knn_vote(similarity, [shot[dimension]["score"] for shot in shots], self.k, self.temperature)
            if vote is None:
                result.errors.append({"metric": dimension, "reason": "no neighbouring example has a human score"})
                continue
            mapping = (self.calibration or {}).get(dimension)
            calibrated = vote.value if mapping is None else mapping(vote.value)
            result.scores[dimension] = to_score(calibrated)
            neighbours = ", ".join(f"example {i + 1} (cosine {cosine:.3f}, weight {weight:.2f}, human score {score})"
                                   for i, cosine, weight, score in vote.neighbours)
            result.feedback[dimension] = (
                f"Proxy score {vote.value:.2f}, calibrated {calibrated:.2f} -> {result.scores[dimension]}: "
                f"similarity-weighted human scores of the {len(vote.neighbours)} nearest of {len(shots)} R-J examples: "
                f"{neighbours}."
            )

    def _recall(self, result: ItemResult, claims: list[str], sentences: list[str], vectors: dict[str, np.ndarray]) -> None:
        if not claims:
            result.errors.append({"metric": "recall", "reason": "the query has no gold claims"})
            return
        matrix = np.array([vectors[s] for s in sentences]) if sentences else None
        result.claim_matches = []
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


def build_embed_judge(spec: str, model: str, options: Any) -> EmbedJudge:
    """The `embed:` judge (its registration in `bespoke_metric.judging.judges`), of its options (an `EmbedOptions`)."""
    return EmbedJudge(model or DEFAULT_ENCODER, spec=spec, **given(options))
