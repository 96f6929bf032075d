"""A local document collection searched with BM25 (`docs:DIR`), and frozen corpora written as one.

The offline stand-in for a web search engine: a folder of `.txt` / `.jsonl` documents. `freeze` writes
every result a search cache holds into such a folder, so every system can search one frozen corpus.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError

from ..retrieval import BM25
from .base import DEFAULT_K
from .cache import SearchCacheError, cached_searches
from .noise import result_id
from .providers import SearchResult

FROZEN_FILE = "frozen.jsonl"
"""The collection file `freeze` writes."""


class SearchCollectionError(UserError):
    """A search collection that cannot be read (`--search-docs`): no such folder, no document, a bad line."""


class DocumentCollection:
    """A local document collection searched with BM25: the offline stand-in for a web search engine.

    The folder holds `.txt` files (title: the file name, url: the file's `file://` URI, text: the
    contents) and `.jsonl` files (one `{"title", "url", "text"}` object a line), searched recursively in
    sorted order (a `.jsonl` line may also carry a `date`). Calling the collection with a query returns
    its best `k` documents."""

    def __init__(self, folder: str | os.PathLike[str], k: int = DEFAULT_K):
        self.folder = Path(folder)
        self.k = k
        if not self.folder.is_dir():
            raise SearchCollectionError(f"search collection {self.folder} (--search-docs) is not a folder")
        self.documents = self._read(self.folder)
        if not self.documents:
            raise SearchCollectionError(f"search collection {self.folder} holds no .txt or .jsonl documents")
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
                            raise SearchCollectionError(f"{path}, line {number}: not valid JSON ({error.msg})") from None
                        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                            raise SearchCollectionError(f"{path}, line {number}: expected an object with a string 'text'")
                        document = {"title": str(record.get("title", "")), "url": str(record.get("url", "")), "text": record["text"]}
                        if record.get("date"):
                            document["date"] = str(record["date"])
                        documents.append(document)
        return documents

    def __call__(self, query: str) -> list[SearchResult]:
        scores = self._index.scores(query)
        return [dict(self.documents[i]) for i in np.argsort(-scores, kind="stable")[: self.k] if scores[i] > 0]

    def describe(self) -> dict[str, Any]:
        return {"collection": str(self.folder), "documents": len(self.documents), "k": self.k}


class ReplayedCollection:
    """The `docs:` collection of a replayed run (`--search-replay`) whose folder is not here: the replay
    answers every search from its cache, so nothing is read from it, and a search it is asked for fails."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)

    def __call__(self, query: str) -> list[SearchResult]:
        raise SearchCollectionError(f"search collection {self.folder} is not a folder: a replay answers from its search cache only")

    def describe(self) -> dict[str, Any]:
        return {"collection": str(self.folder)}


def freeze(cache: str | os.PathLike[str], out: str | os.PathLike[str]) -> tuple[Path, int]:
    """Write every result the search cache file `cache` holds, each document once, into the folder
    `out` as `frozen.jsonl` (a `docs:` collection); the file and the number of documents."""
    documents: dict[str, SearchResult] = {}
    for _, _, results in cached_searches(cache):
        for result in results:
            documents.setdefault(result_id(result), {name: str(result[name]) for name in ("title", "url", "text", "date") if result.get(name)})
    if not documents:
        raise SearchCacheError(f"search cache {cache} holds no search results to freeze")
    path = Path(out) / FROZEN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps({"text": "", **doc}, ensure_ascii=False) + "\n" for doc in documents.values()))
    return path, len(documents)
