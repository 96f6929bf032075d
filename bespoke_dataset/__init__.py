"""BESPOKE's data through the `datasets` API: loading either public layout, typed configs, export.

>>> from bespoke_dataset import load
>>> bench = load("benchmark", source="sample")   # or "yonsei-dli/BESPOKE", or a local folder
"""

from .errors import BespokeDataError, BespokeDataWarning
from .exporting import export, push_to_hub
from .features import CONFIGS, FEATURES
from .vocabulary import DIMENSION_LABELS, DIMENSIONS
from .keys import normalise_query_id, query_key
from .loading import available_configs, load
from .source import DEFAULT_SOURCE, SAMPLE, SAMPLE_DIR, ResolvedSource, fingerprint, resolve_source
from .version import __version__

__all__ = [
    "BespokeDataError", "DIMENSION_LABELS", "BespokeDataWarning", "CONFIGS", "DEFAULT_SOURCE", "DIMENSIONS", "FEATURES", "SAMPLE",
    "SAMPLE_DIR", "ResolvedSource", "__version__", "available_configs", "export", "fingerprint", "load",
    "normalise_query_id", "push_to_hub", "query_key", "resolve_source",
]
