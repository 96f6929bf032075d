"""History selection: find the sessions of a user's history that matter for a query.

Three retrievers share one interface (`fit` on history sessions, then `search` for many queries at
once), and every search is confined to the querying user's own sessions:

- `DenseRetriever`: cosine similarity of `sentence-transformers` embeddings (`embeddings.Embedder`). All
  sessions are encoded in batches once per run, and vectors are cached on disk keyed by model and text
  hash, so a second run, or a second context configuration, encodes nothing.
- `BM25Retriever`: lexical BM25 (`bm25s`), one index per user.
- `HybridRetriever`: reciprocal-rank fusion of the two.

Nothing here calls an LLM; query expansion happens before `search` and is passed in as query text.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from bespoke_dataset.errors import UserError, require_extra
from bespoke_metric.backends.local.encoders import DEFAULT_ENCODER

from .embeddings import Embedder

RRF_K = 60
"""The constant of reciprocal-rank fusion, 1/(k + rank); 60 is the value of Cormack et al. (2009)."""
RETRIEVERS = ("dense", "bm25", "hybrid")


@dataclass(frozen=True)
class Hit:
    id: str
    score: float


class Retriever(Protocol):
    name: str

    def fit(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        """Index history sessions (rows of the `histories` config: `user`, `id`, `text`, ...)."""
        ...

    def search(self, queries: Sequence[tuple[str, str]], k: int) -> list[list[Hit]]:
        """For each `(user, query text)`, the best `k` of that user's sessions, best first."""
        ...

    def describe(self) -> dict[str, Any]:
        """Settings for the results file."""
        ...


def _group_by_user(sessions: Iterable[Mapping[str, Any]]) -> dict[str, tuple[list[str], list[str]]]:
    """user -> (ids, texts), in the given order."""
    grouped: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for number, session in enumerate(sessions, start=1):
        try:
            user, session_id, text = str(session["user"]), str(session["id"]), session["text"]
        except KeyError as error:
            raise UserError(f"history session #{number} has no field {error.args[0]!r}") from None
        ids, texts = grouped[user]
        ids.append(session_id)
        texts.append(text or "")
    return dict(grouped)


def _top_k(ids: Sequence[str], scores: np.ndarray, k: int) -> list[Hit]:
    # A stable sort keeps ties in history order, so rankings are deterministic.
    order = np.argsort(-scores, kind="stable")[:k]
    return [Hit(ids[i], float(scores[i])) for i in order]


def _unknown_user(user: str) -> KeyError:
    return KeyError(f"user {user!r} has no history sessions in the retriever's index")


# ---------------------------------------------------------------- dense


class DenseRetriever:
    name = "dense"

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._index: dict[str, tuple[list[str], np.ndarray]] = {}

    def fit(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        grouped = _group_by_user(sessions)
        # One encode call for every user's sessions: batches stay full and the cache is read once.
        all_texts = [text for _, texts in grouped.values() for text in texts]
        vectors = self.embedder.encode(all_texts)
        start = 0
        self._index = {}
        for user, (ids, texts) in grouped.items():
            self._index[user] = (ids, vectors[start : start + len(texts)])
            start += len(texts)

    def search(self, queries: Sequence[tuple[str, str]], k: int) -> list[list[Hit]]:
        query_vectors = self.embedder.encode([text for _, text in queries])
        results = []
        for (user, _), vector in zip(queries, query_vectors, strict=True):
            if user not in self._index:
                raise _unknown_user(user)
            ids, matrix = self._index[user]
            results.append(_top_k(ids, matrix @ vector, k))
        return results

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name, **self.embedder.describe()}


# ---------------------------------------------------------------- lexical


def _bm25() -> Any:
    return require_extra("bm25s", "offline", "BM25 retrieval (history selection, docs: search)")


def _bm25_tokens(texts: Sequence[str]) -> list[list[str]]:
    return _bm25().tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)


class BM25:
    """A BM25 index over one list of texts (`bm25s`, Lucene scoring, English stopwords, no stemming)."""

    def __init__(self, texts: Sequence[str]):
        bm25s = _bm25()

        self.size = len(texts)
        tokens = _bm25_tokens(texts)
        self._index: Any = None
        # Texts that are all empty or stopwords leave no term to index (bm25s then fails on an empty
        # vocabulary); such an index matches nothing.
        if any(tokens):
            self._index = bm25s.BM25()
            self._index.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self._index is None:
            return np.zeros(self.size, dtype=np.float32)
        tokens = _bm25_tokens([query])[0]
        if not tokens:  # a query of stopwords only matches nothing
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._index.get_scores(tokens), dtype=np.float32)


class BM25Retriever:
    """Lexical retrieval. Only sessions sharing a term with the query are hits (score > 0): the rest
    have no lexical evidence, and ranking them (in history order) would bias a fusion toward them."""

    name = "bm25"

    def __init__(self) -> None:
        self._index: dict[str, tuple[list[str], BM25]] = {}

    def fit(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        # A user whose sessions are all empty or stopwords gets an empty index: no hits, no crash.
        self._index = {user: (ids, BM25(texts)) for user, (ids, texts) in _group_by_user(sessions).items()}

    def search(self, queries: Sequence[tuple[str, str]], k: int) -> list[list[Hit]]:
        results = []
        for user, text in queries:
            if user not in self._index:
                raise _unknown_user(user)
            ids, index = self._index[user]
            results.append([hit for hit in _top_k(ids, index.scores(text), k) if hit.score > 0])
        return results

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name}


# ---------------------------------------------------------------- fusion


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[Hit]:
    """Fuse ranked id lists: score(id) = sum over lists of 1 / (k + rank), rank from 1. Best first;
    ties keep the order of first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return [Hit(item, score) for item, score in sorted(scores.items(), key=lambda pair: -pair[1])]


class HybridRetriever:
    """Dense and BM25 rankings fused with reciprocal-rank fusion."""

    name = "hybrid"

    def __init__(self, embedder: Embedder, *, depth: int = 100, rrf_k: int = RRF_K):
        self.dense = DenseRetriever(embedder)
        self.lexical = BM25Retriever()
        self.depth = depth
        """How deep each ranking goes into the fusion."""
        self.rrf_k = rrf_k

    def fit(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        sessions = list(sessions)
        self.dense.fit(sessions)
        self.lexical.fit(sessions)

    def search(self, queries: Sequence[tuple[str, str]], k: int) -> list[list[Hit]]:
        depth = max(k, self.depth)
        dense = self.dense.search(queries, depth)
        lexical = self.lexical.search(queries, depth)
        return [
            reciprocal_rank_fusion([[hit.id for hit in a], [hit.id for hit in b]], self.rrf_k)[:k]
            for a, b in zip(dense, lexical, strict=True)
        ]

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name, **self.dense.embedder.describe(), "rrf_k": self.rrf_k}


def make_retriever(
    name: str,
    *,
    embedding_model: str | os.PathLike[str] = DEFAULT_ENCODER,
    cache_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 64,
    max_seq_length: int | None = None,
    progress: bool = False,
) -> Retriever:
    """`dense` | `bm25` | `hybrid`. The embedding model of `dense` and `hybrid` is located here: one
    that is not available is a `ModelNotFoundError` before any work."""
    if name == "bm25":
        return BM25Retriever()
    if name in ("dense", "hybrid"):
        embedder = Embedder(embedding_model, cache_dir=cache_dir, batch_size=batch_size, max_seq_length=max_seq_length, progress=progress)
        return DenseRetriever(embedder) if name == "dense" else HybridRetriever(embedder)
    raise UserError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
