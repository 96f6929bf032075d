"""`bespoke score`, `meta-eval`: the judging commands."""
