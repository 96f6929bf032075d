"""Write a synthetic BESPOKE release (same as `bespoke synth`): `python scripts/make_synthetic.py --out DIR`.

`python scripts/make_synthetic.py --sample` regenerates the bundled sample in `bespoke_dataset/sample/`.
"""

from __future__ import annotations

import argparse
import sys

from bespoke_cli import synth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=synth.HELP)
    synth.add_arguments(parser)
    return synth.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
