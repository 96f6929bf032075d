"""`bespoke import`, `tasks-path`: BESPOKE in other evaluation frameworks (inspect, lm-eval)."""
