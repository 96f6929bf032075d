"""A config's rows as plain dicts, built straight from the raw tables with pyarrow.

For a run that reads a config once, such as scoring (`benchmark`): no `datasets`, which imports pandas
(about half a second before the first judge call) and writes an Arrow cache. The same record builders
make `load`'s datasets, so `load_rows(config, source) == list(load(config, source))`.
"""

from __future__ import annotations

from pathlib import Path

from .errors import BespokeDataError, UserError
from .reading.raw import RawRelease, typed_configs
from .reading.records import BUILDERS, Record, build_records
from .source import DEFAULT_SOURCE, ResolvedSource, resolve_source


def resolve_config_source(config: str, source: str | Path | ResolvedSource = DEFAULT_SOURCE,
                          revision: str | None = None, *, hub_cache_dir: str | Path | None = None) -> ResolvedSource:
    """`source` resolved (see `resolve_source`) once it is known to give `config`: a ValueError names an
    unknown config before anything is downloaded, a BespokeDataError asks for histories from the GitHub
    layout, which has none."""
    if config not in BUILDERS:
        raise UserError(f"unknown config {config!r}; choose one of {', '.join(BUILDERS)}")
    resolved = source if isinstance(source, ResolvedSource) else resolve_source(source, revision,
                                                                                hub_cache_dir=hub_cache_dir)
    if config == "histories" and resolved.layout == "github":
        raise BespokeDataError(str(resolved.path), "the GitHub layout has no histories; load 'histories' from "
                               "the Hub repo or a local copy of it")
    return resolved


def available_configs(source: str | Path | ResolvedSource = DEFAULT_SOURCE, revision: str | None = None) -> list[str]:
    """The configs a source (a Hub repo id, a local folder in any layout, ``"sample"``, or one already
    resolved) can give: all of them from the Hub layout; from the GitHub layout all but `histories`, and
    `meta_test` only when its files are there; from an export, those it holds."""
    source = source if isinstance(source, ResolvedSource) else resolve_source(source, revision)
    if source.layout == "hub":
        return list(BUILDERS)
    if source.layout == "typed":
        held = typed_configs(source.path)
        return [c for c in BUILDERS if c in held]
    has_meta_test = RawRelease(source.path).has("meta_test")
    return [c for c in BUILDERS if c != "histories" and (c != "meta_test" or has_meta_test)]


def load_rows(config: str, source: str | Path | ResolvedSource = DEFAULT_SOURCE,
              revision: str | None = None) -> list[Record]:
    """The rows of one config (see `features.CONFIGS`) as `load` gives them, read from the raw tables every
    time (no cache: building the `benchmark` rows of the whole release takes tens of milliseconds).
    Problems in the data raise BespokeDataError or warn with BespokeDataWarning, as `load` does."""
    resolved = resolve_config_source(config, source, revision)
    return build_records(config, RawRelease(resolved.path))
