"""Search augmentation: a hook that returns documents for a query, and an offline one over local files.

A search hook is any callable `search(query) -> [{"title", "url", "text"}]`; its results go into every
prompt of the system under test. `DocumentCollection` is the offline stand-in for a web search engine: a
folder of `.txt` / `.jsonl` documents searched with BM25.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bespoke_dataset.errors import UserError

from .retrieval import BM25

SearchResult = dict[str, str]
"""`{"title", "url", "text"}`."""
SearchHook = Callable[[str], list[SearchResult]]
"""What search augmentation calls: a query in, a few documents out."""


class SearchCollectionError(UserError):
    """A search collection that cannot be read (`--search-docs`): no such folder, no document, a bad line."""


class DocumentCollection:
    """A local document collection searched with BM25: the offline stand-in for a web search engine.

    The folder holds `.txt` files (title: the file name, url: the file's `file://` URI, text: the
    contents) and `.jsonl` files (one `{"title", "url", "text"}` object a line), searched recursively in
    sorted order. Calling the collection with a query returns its best `k` documents."""

    def __init__(self, folder: str | os.PathLike[str], k: int = 3):
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
                        documents.append(
                            {"title": str(record.get("title", "")), "url": str(record.get("url", "")), "text": record["text"]}
                        )
        return documents

    def __call__(self, query: str) -> list[SearchResult]:
        scores = self._index.scores(query)
        return [dict(self.documents[i]) for i in np.argsort(-scores, kind="stable")[: self.k] if scores[i] > 0]

    def describe(self) -> dict[str, Any]:
        return {"collection": str(self.folder), "documents": len(self.documents), "k": self.k}
