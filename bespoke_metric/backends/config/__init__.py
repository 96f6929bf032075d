"""What a command or a config file gives its engines, read once: values by key and the options shared by all.

| module | concern |
|---|---|
| `values` | a YAML config's or a command line's values by key, and the mistakes they can hold (`ConfigError`) |
| `shared_options` | the options a command gives once for all its engines (placement, Batch API, spending), and which reach each |

The options of one engine are its own dataclass, in `bespoke_metric.backends.options`.
"""
