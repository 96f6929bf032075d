"""The files a run keeps beside its predictions `NAME.jsonl`, and the checks that make resuming safe.

`NAME.run.json` (the `system` block: models, context configuration, settings, data; and, once the run ends,
how many of its predictions were answered without a degenerate profile or rewrite), `NAME.profiles.jsonl`
(profiles and query expansions, for inspection and reuse) and `NAME.cache.sqlite` (every LLM call).
Predictions are appended as they are generated, so a killed run, started again with the same output,
generates only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bespoke_dataset.atomic import atomic_write_text
from bespoke_dataset.errors import UserError
from bespoke_dataset.keys import query_key

log = logging.getLogger(__name__)


class GenerationError(UserError):
    """A run that cannot start or continue (mismatched settings on resume, a damaged predictions file)."""


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


def append_predictions(output: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Append prediction records to `output`, one JSON line each, flushed to disk before returning."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("a", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        stream.flush()
        os.fsync(stream.fileno())


OUTCOMES = ("degenerate",)
"""What a run file records of what happened rather than of how the run was set up: not compared on resume."""


def degenerate_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many predictions were answered without their profile or rewrite, by part (their `degenerate`
    marks): `{"profile": 7}`; empty when none was."""
    counts: dict[str, int] = {}
    for record in records:
        for part in record.get("degenerate") or {}:
            counts[part] = counts.get(part, 0) + 1
    return dict(sorted(counts.items()))


def record_outcomes(manifest: Path, system: Mapping[str, Any], predictions: Iterable[Mapping[str, Any]]) -> None:
    """Rewrite the run file with what its predictions say happened (`degenerate_counts` over every record
    of the predictions file, a resumed run's earlier ones included)."""
    degenerate = degenerate_counts(predictions)
    atomic_write_text(manifest, json.dumps({**system, **({"degenerate": degenerate} if degenerate else {})},
                                           indent=2, ensure_ascii=False) + "\n")


NAMING_KEYS = ("model_name",)
"""What a run file records that names the system and changes none of its answers: a resume may change it."""


def recorded_model_name(predictions: str | os.PathLike[str]) -> str | None:
    """The name `bespoke generate --model-name` gave the system of a predictions file, from its run file
    (`NAME.run.json` beside it); None when it has none."""
    manifest = sidecar(Path(predictions), ".run.json")
    try:
        name = json.loads(manifest.read_text(encoding="utf-8")).get("model_name")
    except (OSError, ValueError, AttributeError):  # no run file, or not one of ours: nothing recorded
        return None
    return str(name) if name else None


def check_resume(output: Path, manifest: Path, system: Mapping[str, Any]) -> None:
    """Refuse to add to predictions made under other settings or from other data (`system["data"]`),
    naming each setting that differs by its flag, with this run's value and the recorded one."""
    if not (output.exists() and manifest.exists()):
        return
    ignored = OUTCOMES + NAMING_KEYS
    before = {key: value for key, value in json.loads(manifest.read_text(encoding="utf-8")).items() if key not in ignored}
    now = {key: value for key, value in json.loads(json.dumps(system)).items() if key not in ignored}
    if before != now:
        changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        what = "from other data" if changed == ["data"] else "with other settings"
        differences = list(dict.fromkeys(_differences(before, now)))  # the context is recorded twice
        shown = ", ".join(differences[:_SHOWN]) + (f" and {len(differences) - _SHOWN} more" if len(differences) > _SHOWN else "")
        raise GenerationError(
            f"{manifest} records a run {what}: {shown} (this run's vs the recorded); "
            "use another --output, or delete the old predictions to start over"
        )


_SHOWN = 5
"""How many differences a refused resume names."""


def _differences(before: Any, now: Any, path: tuple[str, ...] = ()) -> list[str]:
    """`NAME NOW vs BEFORE` for each value that differs between two run records, in key order."""
    if isinstance(before, dict) and isinstance(now, dict):
        return [line for key in sorted(set(before) | set(now))
                for line in _differences(before.get(key), now.get(key), (*path, key))]
    if before == now:
        return []
    return [f"{_setting_name(path)} {_shown(now)} vs {_shown(before)}"]


def _setting_name(path: tuple[str, ...]) -> str:
    """A run record's field as the user gives it: a setting by its flag (`--max-new-tokens`), the model
    and context by theirs; anything else (the data, the prompt version) by its place in the record."""
    if len(path) == 2 and path[0] == "settings" and path[1] != "generation_prompt_version" and path[1] != "token_counter":
        return "--" + path[1].replace("_", "-")
    if path and path[0] in ("model", "context", "profiler", "retriever"):
        return "--" + path[0] + ("" if len(path) == 1 else f" ({'.'.join(path[1:])})")
    return ".".join(path)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def canonical_sha256(value: Any) -> str:
    """SHA-256 of `value` as canonical JSON (keys sorted, values not JSON-native written as strings)."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ProfileStore:
    """Profiles and query expansions of a run, saved as JSONL beside the predictions and reused on
    resume. Keyed by (kind, key); each record carries the fingerprint of the run's settings, and records
    of other settings are not reused (and dropped at the next write). The file is rewritten whole
    (atomically) after each addition; with no `path`, kept in memory only."""

    def __init__(self, path: Path | None, run: str):
        self.path = path
        self.run = run
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        if path is not None and path.exists():
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
        added = [{**record, "run": self.run} for record in records]
        if not added:
            return
        for record in added:
            self.records[(record["kind"], record["key"])] = record
        if self.path is not None:
            atomic_write_text(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records.values()))
