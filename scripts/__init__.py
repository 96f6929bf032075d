"""The `bespoke` command line (installed as the `bespoke_cli` package): thin wrappers over the libraries."""
