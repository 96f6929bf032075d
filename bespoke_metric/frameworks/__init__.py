"""BESPOKE where researchers already run their evaluations: inspect, lm-evaluation-harness, and reading their runs back."""
