"""`bespoke info`, `export`, `synth`: the data commands."""
