"""inspect_ai's models as backends: `inspect:ROLE`, the judging protocol over inspect's model for a role
(`--model-role grader=PROVIDER/MODEL`, so inspect's providers and connection limits serve the judge), and
the text-generation function the inspect task writes profiles with.

Built inside an inspect eval (a scorer, a solver): that is where the roles are bound. Needs `inspect-ai`
(the `inspect` extra).
"""

from __future__ import annotations

from typing import Any

from bespoke_metric.backends.base import Completion
from bespoke_metric.backends.callable_backend import CallableBackend, Generate
from bespoke_metric.backends.options import InspectOptions, OptionError, given
from bespoke_metric.backends.providers.openai_backend import STAND_IN_FIELD


def answered_by_stand_in(model: str | None = None) -> bool:
    """Whether the latest answer inspect recorded in this sample's transcript (of `model`, where given) came from
    `bespoke stand-in`, which says so in every response body inspect keeps with the call. A server answers as a
    stand-in for every call or none, so calls of one model made at once cannot be told apart wrongly."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import transcript

    events = [event for event in transcript().events
              if isinstance(event, ModelEvent) and (model is None or event.model == model)]
    response = events[-1].call.response if events and events[-1].call is not None else None
    return isinstance(response, dict) and response.get(STAND_IN_FIELD) is True


def inspect_generate(model: Any) -> Generate:
    """`(messages, max_tokens) -> Completion` through an inspect `Model`: its text (reasoning left out, as
    inspect gives `completion`), tokens, and whether the output limit cut it off."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}

    async def generate(messages: list[dict[str, str]], max_tokens: int) -> Completion:
        chat = [kinds[message["role"]](content=message["content"]) for message in messages]
        output = await model.generate(chat, config=GenerateConfig(max_tokens=max_tokens))
        if output.error:
            raise RuntimeError(output.error)
        usage = output.usage
        truncated = bool(output.choices) and output.stop_reason == "max_tokens"
        return Completion(output.completion, usage.input_tokens if usage else 0, usage.output_tokens if usage else 0,
                          truncated, served_model=output.model or "",
                          truncation_reason="max_tokens" if truncated else "", stand_in=answered_by_stand_in(str(model)))

    return generate


def inspect_backend(role: str, options: InspectOptions) -> CallableBackend:
    """The `inspect:ROLE` engine's backend: inspect's model for `role` (an `inspect eval --model-role`), which
    must be bound. Its identity names the model that plays the role, so a cache never mixes two models."""
    try:
        from inspect_ai.model import get_model

        model = get_model(role=role, required=True)
    except Exception as error:  # no inspect, or the role not bound (inspect's PrerequisiteError): a user's mistake
        raise OptionError(f"inspect:{role} judges inside an inspect eval, with the role bound: inspect eval "
                          f"bespoke_metric/bespoke -T judge=inspect:{role} --model-role {role}=PROVIDER/MODEL "
                          f"(pip install 'bespoke-eval[inspect]'); here: {error}") from None
    return CallableBackend(inspect_generate(model), name="inspect", model=str(model),
                           identity={"role": role, **given(options)})
