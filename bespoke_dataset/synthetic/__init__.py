"""Synthetic releases in the real raw format, for tests, benchmarks and offline demos.

| module | concern |
|---|---|
| `generator` | users, sessions, queries and judged responses, written as a release (`write_release`, `write_sample`) |
| `topics` | the topics, personas, tones and styles the generator draws from |
| `responses` | responses of known quality and their judgments (examples and the held-out meta-test kinds) |
| `layouts` | a release rewritten into the other layouts the real one plausibly has (`rewrite`) |
| `user_data` | an input folder for `bespoke build` (`write_user_data`): the raw data a team would bring |
"""

from .generator import MARKER, TRUTH_FILE, synthetic_release, write_release, write_sample
from .responses import META_KINDS, paraphrase
from .user_data import write_user_data

__all__ = ["MARKER", "META_KINDS", "TRUTH_FILE", "paraphrase", "synthetic_release", "write_release", "write_sample",
           "write_user_data"]
