"""The BESPOKE metric Space: pick a query, paste a response, pick a judge, see the scores.

Written by `bespoke space metric`; the app lives in the `bespoke-eval` package (`bespoke_metric.hub.metric_app`).
An API judge reads its key from the Space's secrets (OPENAI_API_KEY, OPENAI_BASE_URL); BESPOKE_SOURCE
names the data (default yonsei-dli/BESPOKE).
"""

import os

from bespoke_metric.hub.metric_app import build_app

build_app(source=os.environ.get("BESPOKE_SOURCE", "yonsei-dli/BESPOKE")).launch()
