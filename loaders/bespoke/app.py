"""The BESPOKE metric Space: pick a query, paste a response, pick a judge, see the scores.

Written by `bespoke space metric`; the app lives in the `bespoke-eval` package (`bespoke_metric.hub.metric_app`).
An API judge reads its key from the Space's secrets (OPENAI_API_KEY, OPENAI_BASE_URL); BESPOKE_SOURCE
names the data (default yonsei-dli/BESPOKE).
"""

import os
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("bespoke_metric") is None:
    # The Space's build installs requirements.txt (bespoke-eval's dependencies) before it copies this folder:
    # bespoke-eval itself, the wheel beside this file, is installed here, at start (`os`: the app's own import).
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bespoke_eval-0.4.1-py3-none-any.whl")], check=True)

from bespoke_metric.hub.metric_app import build_app

build_app(source=os.environ.get("BESPOKE_SOURCE", "yonsei-dli/BESPOKE")).launch()
