"""Every row of the Claude catalogue (`anthropic_models.FAMILIES`) as the requests it makes: a structured answer asked
of each Claude is held the way Anthropic's pages say that model takes (structured outputs from Opus 4.1, Sonnet 4.5
and Haiku 4.5 on; a forced tool with thinking off for Claude 3 and 4; the paper's lines for Claude 2), and
`temperature` goes only to the models that take it, over real HTTP to the strict Messages API server on 127.0.0.1,
which answers what the API refuses with its 400. The table below is written from those pages, not from the
catalogue: a row that says the wrong thing sends a body no one asked for."""

from __future__ import annotations

import json

import anthropic
import pytest
from backend_outcomes import ask, complete
from fakes.anthropic_server import serve_anthropic

from bespoke_dataset.errors import UserError
from bespoke_metric.backends.providers.anthropic_models import FAMILIES, claude_family
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.testing.system_responder import answer_any

KEY = "sk-ant-test-catalogue-0b1d"
SCHEMA = {"title": "claim verdicts", "type": "object", "properties": {"verdicts": {"type": "array"}}, "required": ["verdicts"]}
VERDICTS = {"verdicts": [{"claim": 1, "verdict": True}]}

# model -> (how a structured answer is held, whether it takes temperature), from Anthropic's structured-outputs,
# effort and model pages (2026-12-04) and the Opus 5.5 notes
CLAUDES = {
    "claude-opus-6": ("format", False),
    "claude-opus-5-5": ("format", False),
    "claude-fable-5-2": ("format", False),
    "claude-opus-5": ("format", False),
    "claude-opus-4-7": ("format", False),
    "claude-sonnet-5-5": ("format", True),
    "claude-haiku-5-5": ("format", True),
    "claude-opus-4-6": ("format", True),
    "claude-sonnet-4-6": ("format", True),
    "claude-opus-4-5": ("format", True),
    "claude-opus-4-5-20251101": ("format", True),
    "claude-sonnet-4-5": ("format", True),
    "claude-haiku-4-5-20251001": ("format", True),
    "claude-opus-4-1": ("format", True),
    "claude-opus-4-1-20250805": ("format", True),
    "claude-sonnet-4-20250514": ("tool", True),
    "claude-opus-4-0": ("tool", True),
    "claude-3-7-sonnet-20250219": ("tool", True),
    "claude-3-5-haiku-20241022": ("tool", True),
    "claude-3-opus-20240229": ("tool", True),
    "claude-2.1": ("lines", True),
    "claude-instant-1.2": ("lines", True),
    "claude-next-7": ("format", True),  # a Claude no row names: taken to be a current one
}


@pytest.fixture(scope="module")
def server():
    with serve_anthropic() as running:
        yield running
        assert running.refused == []  # the strict server never had to refuse one of our bodies


def claude(server, model: str, **options):
    return make_backend(f"anthropic:{model}", base_url=server.root_url, api_key=KEY, backoff_base=0.01, **options)


def test_the_table_names_a_model_of_every_row() -> None:
    assert {claude_family(model).name for model in CLAUDES} == {family.name for family in FAMILIES} | {"other"}


@pytest.mark.parametrize("model", CLAUDES)
def test_a_structured_answer_is_held_as_the_model_takes_it(server, model: str) -> None:
    held, _ = CLAUDES[model]
    server.responder = lambda body: json.dumps(VERDICTS)
    try:
        (answer,) = complete(claude(server, model), [ask(json_schema=SCHEMA)])
    finally:
        server.responder = answer_any
    body = server.calls[-1].body
    assert json.loads(answer.text) == VERDICTS
    assert "thinking" not in body
    if held == "format":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": anthropic.transform_schema(SCHEMA)}}
        assert not {"tools", "tool_choice"} & body.keys()
    elif held == "tool":
        assert body["tool_choice"] == {"type": "tool", "name": "claim_verdicts"} and body["tools"][0]["input_schema"] == SCHEMA
        assert "output_config" not in body
    else:
        assert not {"tools", "tool_choice", "output_config"} & body.keys()
        assert '"verdicts"' in body["messages"][-1]["content"]  # the schema spelled out in the prompt


@pytest.mark.parametrize("model", CLAUDES)
def test_temperature_goes_to_the_models_that_take_it_and_no_other(server, model: str) -> None:
    _, takes = CLAUDES[model]
    if takes:
        complete(claude(server, model, temperature=0.0), [ask()])
        assert server.calls[-1].body["temperature"] == 0.0
    else:
        with pytest.raises(UserError, match=f"anthropic:{model} takes no temperature"):
            claude(server, model, temperature=0.0)
    complete(claude(server, model), [ask()])
    assert "temperature" not in server.calls[-1].body
