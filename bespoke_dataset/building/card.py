"""Cards: templates with ``{{name}}`` placeholders, and the card of a built release."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..reading.raw import TABLES
from ..version import __version__
from ..vocabulary import SPLIT

RELEASE_CARD = Path(__file__).parent / "release_card.md"


def fill(template: str, values: Mapping[str, str]) -> str:
    """`template` with each ``{{name}}`` replaced by its value."""
    for name, value in values.items():
        template = template.replace("{{" + name + "}}", value)
    return template


def front_matter() -> dict[str, Any]:
    """The card's YAML: every raw table as a config of one `test` split, as the public card declares them."""
    return {
        "pretty_name": "BESPOKE-format release",
        "tags": ["personalization", "llm-as-a-judge", "bespoke"],
        "configs": [{"config_name": name, "data_files": [{"split": SPLIT, "path": f"{t.folder}/{t.hub_file}"}]}
                    for name, t in TABLES.items()],
    }


def release_card(manifest: Mapping[str, Any], sizes: Mapping[str, int]) -> str:
    """The README.md of a built release, from its manifest (`build.json`) and the rows of each table."""
    counts = manifest["counts"]
    values = {
        "front_matter": yaml.safe_dump(front_matter(), sort_keys=False, allow_unicode=True).strip(),
        "version": __version__,
        "users": str(counts["users"]), "queries": str(counts["queries"]),
        "chat": str(sizes["chat_history"]), "search": str(sizes["search_history"]),
        "shots": str(counts["shots"]), "meta_test": str(counts["meta_test"]),
        "tables": "\n".join(f"| `{TABLES[name].folder}/{TABLES[name].hub_file}` | {n:,} |" for name, n in sizes.items()),
        "rubrics": _provenance(manifest["rubrics"]), "claims": _provenance(manifest["claims"]),
        "share": f"{manifest['meta_test_share']:g}", "seed": str(manifest["seed"]),
    }
    return fill(RELEASE_CARD.read_text(encoding="utf-8"), values)


def _provenance(made: Mapping[str, Any]) -> str:
    """One sentence on where the rubrics or claims came from."""
    text = made["from"]
    if made.get("model"):
        text += f", written by `{made['model']}` (prompt version `{made.get('prompt_version', '?')}`)"
    if made.get("kept") is not None:
        text += f"; {made['kept']} of {made['reviewed']} claims kept after review"
    return text
