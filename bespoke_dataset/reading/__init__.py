"""Reading a raw release in whatever layout its rows come in, and saying what fell back.

| module | concern |
|---|---|
| `raw` | the seven tables (Hub layout) or per-user files (GitHub layout) as rows that know where they came from |
| `payloads` | shot, meta-test, claim and rubric cells in every form they plausibly take |
| `histories` | history text in every layout an export plausibly has: turns, search queries, URLs, a time |
| `timestamps` | times as exports write them (python-dateutil), zones kept |
| `records` | the typed records of each config, joined and validated |
| `notes` | what was met per table: forms, counts, fallbacks; one summary warning per table |

What a whole release's notes come to (`check`, `bespoke info --check`) is `bespoke_dataset.report`'s.
"""
