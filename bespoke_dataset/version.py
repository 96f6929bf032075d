"""The installed package version (part of every cache key, so an upgrade never serves stale data)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bespoke-eval")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
