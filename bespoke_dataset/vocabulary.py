"""The words of the benchmark, defined once: its dimensions, their labels and the score scale.

Kept free of heavy imports, so that anything (the judge, the CLI, a results reader) can use them
without loading `datasets`.
"""

from __future__ import annotations

DIMENSIONS: tuple[str, ...] = ("need_alignment", "content_depth", "tone", "explanation_style")
"""The four judged dimensions, in the official order (each a 1-5 score and feedback)."""

DIMENSION_LABELS: dict[str, str] = {
    "need_alignment": "Need Alignment",
    "content_depth": "Content Depth",
    "tone": "Tone",
    "explanation_style": "Explanation Style",
}
"""How the official judge writes each dimension (`Need Alignment Score: 4`)."""

SCORE_RANGE: tuple[int, int] = (1, 5)
"""Every dimension is an integer score from 1 to 5."""

SPLIT = "test"
"""The one split of every typed config (the public card's `all` is a name `datasets` refuses)."""
