"""Claude's models as the Messages API takes them on 2026-12-04: one row per family, the first that matches a
model name wins. Pure.

A row says how a Claude can be held to a JSON schema, so that nothing the API would refuse is sent:
structured outputs (`output_config.format: {"type": "json_schema", "schema": ...}`, the text answer held to
the schema), else a forced tool (`tool_choice: {"type": "tool"}`, the tool's input the answer), which the API
refuses with thinking on ("Thinking may not be enabled when tool_choice forces tool use") and which Opus 5.5
refuses altogether; a model that can do neither is asked for the paper's lines. It says too whether the model
thinks whatever it is sent (adaptive thinking that cannot be turned off), whether it takes `temperature`, and
which `output_config.effort` values it takes (none at all before Opus 4.5: "This model does not support the
effort parameter."). The sources are each row's `source`: Anthropic's structured-outputs, effort, thinking and
model pages, and the 400s its API answers with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..options import ANTHROPIC_EFFORTS, JUDGMENT_EFFORT
from .model_rows import ModelRow, first_match

Held = Literal["format", "tool", "lines"]
"""How a model's answer is held to a schema: `output_config.format`, a forced tool, or not at all (the
paper's lines)."""


@dataclass(frozen=True)
class ClaudeFamily(ModelRow):
    """What the Messages API takes from the models of one family."""

    structured_outputs: bool
    """Takes `output_config.format` (structured outputs)."""
    forced_tools: bool = True
    """Takes a forced `tool_choice` (`{"type": "tool"}` or `"any"`), with thinking off."""
    always_thinks: bool = False
    """Thinks whatever it is sent (adaptive thinking only: thinking `disabled` and a budget are a 400), so a
    forced tool choice is refused."""
    temperature: bool = True
    """Takes `temperature` (Opus 4.7 and later, and Fable, answer it with a 400)."""
    efforts: tuple[str, ...] = ANTHROPIC_EFFORTS
    """The `output_config.effort` values it takes (`()`: it takes no effort at all)."""
    source: str = ""

    def held(self) -> Held:
        """How a structured answer is asked of it: structured outputs where it takes them, else a forced tool
        where it takes one (never with thinking on), else the paper's lines."""
        if self.structured_outputs:
            return "format"
        return "tool" if self.forced_tools and not self.always_thinks else "lines"


_STRUCTURED = ("platform.claude.com/docs/en/build-with-claude/structured-outputs (2026-12-04): output_config.format "
               "generally available from Claude Opus 4.1, Sonnet 4.5 and Haiku 4.5")
_EFFORT = ("platform.claude.com/docs/en/build-with-claude/effort (2026-12-04): output_config.effort on Fable, Mythos, "
           "Opus 4.5 and later, Sonnet 4.6 and later and Haiku 5.5; max from Opus and Sonnet 4.6, xhigh from Opus 4.7 and "
           "Sonnet 5; any other Claude answers it with a 400 (\"This model does not support the effort parameter.\")")
_OPUS_55 = ("Anthropic's Claude Opus 5.5 notes (2026-09-22) as issue 43 quotes them: adaptive thinking only "
            "(thinking disabled or a budget is a 400, output_config.effort, default medium), any forced tool_choice a 400")

FAMILIES: tuple[ClaudeFamily, ...] = (
    ClaudeFamily("Claude Opus 5.5 and later", r"claude-opus-(?:5-(?:[5-9]|[1-9]\d)|[6-9]|[1-9]\d)(?:-|$)",
                 structured_outputs=True, forced_tools=False, always_thinks=True, temperature=False,
                 source=f"{_OPUS_55}; {_EFFORT}"),
    ClaudeFamily("Claude Fable", r"claude-fable", structured_outputs=True, temperature=False,
                 source=_STRUCTURED + "; Fable refuses temperature (\"`temperature` is deprecated for this model\"); " + _EFFORT),
    ClaudeFamily("Claude Opus 4.7 and later", r"claude-opus-(?:4-(?:[7-9]|[1-9]\d)|5)(?:-|$)", structured_outputs=True,
                 temperature=False, source=f"{_STRUCTURED}; Opus 4.7 and later refuse temperature; {_EFFORT}"),
    ClaudeFamily("Claude Sonnet and Haiku 5 and later", r"claude-(?:sonnet|haiku)-(?:[5-9]|[1-9]\d)(?:-|$)",
                 structured_outputs=True, source=f"{_STRUCTURED}; {_EFFORT}"),
    ClaudeFamily("Claude 4.6", r"claude-(?:opus|sonnet)-4-6(?:-|$)", structured_outputs=True,
                 efforts=("low", "medium", "high", "max"), source=f"{_STRUCTURED}; {_EFFORT}"),
    ClaudeFamily("Claude Opus 4.5", r"claude-opus-4-5(?:-|$)", structured_outputs=True, efforts=("low", "medium", "high"),
                 source=f"{_STRUCTURED}; {_EFFORT}"),
    ClaudeFamily("Claude Sonnet and Haiku 4.5", r"claude-(?:sonnet|haiku)-4-5(?:-|$)", structured_outputs=True,
                 efforts=(), source=f"{_STRUCTURED}; {_EFFORT}"),
    ClaudeFamily("Claude Opus 4.1", r"claude-opus-4-1(?:-|$)", structured_outputs=True, efforts=(),
                 source=f"{_STRUCTURED}; {_EFFORT}"),
    ClaudeFamily("Claude 3 and 4", r"claude-(?:3|(?:opus|sonnet)-4(?:-0)?(?:-\d{8})?$)", structured_outputs=False,
                 efforts=(), source=_STRUCTURED + "; tool use (forced with tool_choice, thinking off) from Claude 3; "
                 + _EFFORT),
    ClaudeFamily("Claude 2 and Instant", r"claude-(?:2|instant)", structured_outputs=False, forced_tools=False,
                 efforts=(), source="docs.anthropic.com/en/docs/about-claude/models (legacy): no tool use before "
                 "Claude 3; " + _EFFORT),
)
"""Claude's families, most specific first; a model none matches is `OTHER`."""

OTHER = ClaudeFamily("other", r"", structured_outputs=True,
                     source="a Claude not listed here: today's models take structured outputs and every effort")
"""Every other model name: taken to be a current Claude, held by structured outputs, taking every effort."""


def claude_family(model: str) -> ClaudeFamily:
    """The family of `model` (`FAMILIES`, else `OTHER`)."""
    return first_match(FAMILIES, model, OTHER)


def judgment_effort(model: str) -> str | None:
    """The `output_config.effort` a Claude judge's judgments go at unless one is given: `JUDGMENT_EFFORT`, the
    official evaluator's, where the model takes it; None (nothing sent) where it takes no effort."""
    return JUDGMENT_EFFORT if JUDGMENT_EFFORT in claude_family(model).efforts else None
