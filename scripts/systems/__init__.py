"""`bespoke generate`, `run`: the systems-under-test commands."""
