"""Export a release as a typed, Hub-ready folder, and push it to the Hub.

The folder holds `<config>/test-00000-of-00001.parquet` per config, a README.md rendered from
`hub_card.md`, whose YAML declares the configs, the `test` split and the features, so that plain
`datasets.load_dataset(folder_or_repo, "benchmark", split="test")` gives the typed records, and the
benchmark registration `eval.yaml` (the leaderboards `bespoke submit` reports to). An export of a synthetic
release keeps its `SYNTHETIC.md` marker, so every figure scored on the export is still said to be
synthetic. The folder is itself a source (the typed layout of `raw`): `--source EXPORT` reads it back.

Exporting into a folder that holds an earlier export (a clone of the Hub repo it was pushed to, say) replaces only those entries
and keeps the rest (``.git``, ``.gitattributes``, other files); any other non-empty folder is refused
unless forced.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import yaml

from .atomic import FolderOwner, atomic_entries
from .building.card import fill
from .features import CONFIGS, DESCRIPTIONS, FEATURES
from .loading import load
from .reading.raw import data_file
from .registration import BENCHMARK_TASKS, CITATION, REGISTRATION_FILE, render_registration
from .rows import available_configs
from .source import DEFAULT_SOURCE, SYNTHETIC_MARKER, ResolvedSource, resolve_source
from .version import __version__
from .vocabulary import SPLIT

log = logging.getLogger(__name__)

CARD_TEMPLATE = Path(__file__).parent / "hub_card.md"
SYNTHETIC_NOTICE = ("> **Synthetic data.** This export was made from a synthetic release written by "
                    "`bespoke_dataset.synthetic` for tests and demos: invented users, texts and judgments in the "
                    "real format. It is not the BESPOKE benchmark.\n")


def holds_export(folder: Path) -> bool:
    """True when `folder`'s README.md is an export card: its YAML declares only configs of this package,
    each with the data file `export` writes."""
    card = folder / "README.md"
    if not card.is_file():
        return False
    parts = card.read_text(encoding="utf-8", errors="replace").split("---\n", 2)
    if len(parts) < 3 or parts[0]:
        return False
    try:
        meta = yaml.safe_load(parts[1])
    except yaml.YAMLError:
        return False
    configs = meta.get("configs") if isinstance(meta, dict) else None
    return bool(configs) and all(
        isinstance(c, dict) and c.get("config_name") in CONFIGS
        and c.get("data_files") == [{"split": SPLIT, "path": data_file(c["config_name"])}]
        for c in configs
    )


EXPORT = FolderOwner("an earlier export (a README.md with a BESPOKE export card)", holds_export)
"""A folder `export` wrote: it may write into it again."""


def _size_category(rows: int) -> str:
    return "n<1K" if rows < 1_000 else "1K<n<10K" if rows < 10_000 else "10K<n<100K"


def front_matter(sizes: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """The card's YAML: license, configs with their data files, and typed features per config.

    `sizes` maps each exported config to (rows, bytes in Arrow)."""
    return {
        "license": "mit",
        "language": ["en"],
        "pretty_name": "BESPOKE",
        "task_categories": ["text-generation", "question-answering"],
        "tags": ["personalization", "llm-as-a-judge", "search-augmented-llm", "benchmark"],
        "size_categories": [_size_category(max(n for n, _ in sizes.values()))],
        "configs": [{"config_name": c, "data_files": [{"split": SPLIT, "path": data_file(c)}],
                     **({"default": True} if c == "benchmark" else {})} for c in sizes],
        "dataset_info": [{"config_name": c, "features": FEATURES[c]._to_yaml_list(),
                          "splits": [{"name": SPLIT, "num_bytes": size, "num_examples": n}]}
                         for c, (n, size) in sizes.items()],
    }


def render_card(sizes: dict[str, tuple[int, int]], source: ResolvedSource, repo: str = "<org>/<repo>") -> str:
    """The README.md of an exported folder: `hub_card.md` with its placeholders filled."""
    values = {
        "front_matter": yaml.safe_dump(front_matter(sizes), sort_keys=False, allow_unicode=True).strip(),
        "sizes": "\n".join(f"| `{c}` | {n:,} | {DESCRIPTIONS[c]} |" for c, (n, _) in sizes.items()),
        "notice": SYNTHETIC_NOTICE if source.synthetic else "",
        "source": source.source, "revision": source.revision or "local", "fingerprint": source.fingerprint[:16],
        "version": __version__, "citation": CITATION, "repo": repo,
        "tasks": "\n".join(f"| `{task.id}` | {task.description} |" for task in BENCHMARK_TASKS),
    }
    return fill(CARD_TEMPLATE.read_text(encoding="utf-8"), values)


def export(source: str | Path = DEFAULT_SOURCE, out_dir: str | Path = "bespoke-export", revision: str | None = None,
           cache_dir: str | Path | None = None, repo: str = "<org>/<repo>", force: bool = False) -> Path:
    """Write every config the source has (the GitHub layout has no histories) to `out_dir`.

    A non-empty `out_dir` that holds no earlier export is refused (`FolderNotOursError`, nothing touched)
    unless `force`: a fresh clone of a Hub repo needs it once.

    Everything is written to a temporary sibling first; only when all of it is written do the config
    folders and README.md replace their namesakes in `out_dir`, each atomically. Other files in `out_dir`
    are kept (``.git``, ``.gitattributes``, ...), except a config folder this export no longer has that holds
    nothing but a previous export's data file, which is removed. Returns `out_dir`. `repo` is the Hub repo
    id shown in the card's usage example.
    """
    sizes: dict[str, tuple[int, int]] = {}
    with atomic_entries(out_dir, EXPORT, force=force) as tmp:  # refuses a folder not ours before the slow part
        resolved = resolve_source(source, revision)
        configs = available_configs(resolved)
        skipped = [c for c in CONFIGS if c not in configs]
        if skipped:
            log.info("the source has no data for %s; not exported", ", ".join(skipped))
        for config in configs:
            dataset = load(config, resolved, cache_dir=cache_dir)
            path = tmp / data_file(config)
            path.parent.mkdir(parents=True, exist_ok=True)
            dataset.to_parquet(str(path))
            sizes[config] = (len(dataset), dataset.data.nbytes)
        (tmp / "README.md").write_text(render_card(sizes, resolved, repo), encoding="utf-8")
        (tmp / REGISTRATION_FILE).write_text(render_registration(), encoding="utf-8")
        if resolved.synthetic:
            shutil.copyfile(resolved.path / SYNTHETIC_MARKER, tmp / SYNTHETIC_MARKER)
    out = Path(out_dir)
    if not resolved.synthetic:  # an earlier export of synthetic data, replaced by real data
        (out / SYNTHETIC_MARKER).unlink(missing_ok=True)
    for config in skipped:  # stale data of a previous export, no longer declared by the card
        folder = out / config
        if folder.is_dir() and [p.name for p in folder.iterdir()] == [Path(data_file(config)).name]:
            shutil.rmtree(folder)
    return out


def push_to_hub(out_dir: str | Path, repo_id: str, token: str | None = None, private: bool = False,
                revision: str | None = None) -> str:
    """Upload an exported folder to a Hub dataset repo (created if needed); return the commit URL."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset", revision=revision,
                               commit_message=f"Export BESPOKE typed configs (bespoke-eval {__version__})")
    return str(commit.commit_url if hasattr(commit, "commit_url") else commit)
