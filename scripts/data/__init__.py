"""`bespoke info`, `export`, `synth`, `build`: the data commands."""
