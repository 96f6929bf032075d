"""BESPOKE's data through the `datasets` API: loading a release in any layout, typed configs, export.

>>> from bespoke_dataset import load, check
>>> bench = load("benchmark", source="sample")   # or "yonsei-dli/BESPOKE", or a local folder
>>> report = check("sample")                     # what was read from each table, and what fell back
"""

from .errors import BespokeDataError, BespokeDataWarning
from .keys import normalise_query_id, parse_query_key, query_key
from .lazy import lazy_attributes
from .source import DEFAULT_SOURCE, SAMPLE, SAMPLE_DIR, ResolvedSource, fingerprint, resolve_source
from .version import __version__
from .vocabulary import DIMENSION_LABELS, DIMENSIONS

# The rest is imported on first use: `datasets` (and with it pandas) is heavy,
# and scoring with an API judge needs none of them. name -> the module that defines it.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("export", "push_to_hub"), ".exporting"),
    **dict.fromkeys(("CONFIGS", "FEATURES"), ".features"),
    "load": ".loading",
    "available_configs": ".rows",
    **dict.fromkeys(("CheckReport", "check"), ".report"),
}

__all__ = [
    "BespokeDataError", "DIMENSION_LABELS", "BespokeDataWarning", "CONFIGS", "CheckReport", "DEFAULT_SOURCE",
    "DIMENSIONS", "FEATURES", "SAMPLE", "SAMPLE_DIR", "ResolvedSource", "__version__", "available_configs", "check",
    "export", "fingerprint", "load", "normalise_query_id", "parse_query_key", "push_to_hub", "query_key",
    "resolve_source",
]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)
