"""Function calling: the parser of local models' tool-call text on scripted outputs, chat templates that
take tools (the tiny model's tools template, rendered by the real tokenizer), and the `openai:` backend's
native tool calls over real HTTP in both APIs, a conversation continued after a call."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakes.provider_servers import openai_responder, serve_provider

from bespoke_metric.backends.base import Completion, Request, ToolCall
from bespoke_metric.backends.ray.rows import decode_request, encode_request, outcome_row, row_outcome
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.backends.tool_calls import (
    assistant_turn,
    parse_tool_calls,
    template_messages,
    template_takes_tools,
    tool_turn,
    with_tool_calls,
)
from bespoke_metric.testing.tiny_model import CHAT_TEMPLATE, TOOLS_CHAT_TEMPLATE, build_tiny_model

SEARCH = {"type": "function", "function": {"name": "search", "description": "search the web",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                                                          "required": ["query"]}}}
FETCH = {"type": "function", "function": {"name": "fetch", "parameters": {"type": "object", "properties": {}}}}
NAMES = ("search", "fetch")


def call(name="search", **arguments) -> ToolCall:
    return ToolCall(name, arguments)


# -- the parser, on scripted outputs ------------------------------------------------------------------


@pytest.mark.parametrize("text, left, calls", [
    # Hermes / Qwen: one block, two blocks, reasoning before them, an unclosed last block
    ('<tool_call>\n{"name": "search", "arguments": {"query": "seoul trails"}}\n</tool_call>', "",
     [call(query="seoul trails")]),
    ('<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call>\n'
     '<tool_call>{"name": "fetch", "arguments": {}}</tool_call>', "", [call(query="a"), call("fetch")]),
    ('<think>I should look it up.</think>\n<tool_call>{"name": "search", "arguments": {"query": "b"}}</tool_call>',
     "<think>I should look it up.</think>", [call(query="b")]),
    ('<tool_call>\n{"name": "search", "arguments": {"query": "cut"}}', "", [call(query="cut")]),
    # arguments as JSON text, as some models write them; a list of calls in one block
    ('<tool_call>{"name": "search", "arguments": "{\\"query\\": \\"c\\"}"}</tool_call>', "", [call(query="c")]),
    ('<tool_call>[{"name": "search", "arguments": {"query": "d"}}, {"name": "fetch"}]</tool_call>', "",
     [call(query="d"), call("fetch")]),
    # a tagged call to a tool not offered still is a call (the caller answers that it does not exist)
    ('<tool_call>{"name": "weather", "arguments": {"city": "Seoul"}}</tool_call>', "", [call("weather", city="Seoul")]),
    # bare JSON: Llama 3's parameters, a list (Mistral), several objects, in a fence, behind a control token
    ('{"name": "search", "parameters": {"query": "e"}}', "", [call(query="e")]),
    ('[TOOL_CALLS][{"name": "search", "arguments": {"query": "f"}}, {"name": "fetch", "arguments": {}}]', "",
     [call(query="f"), call("fetch")]),
    ('{"name": "search", "parameters": {"query": "g"}}; {"name": "fetch", "parameters": {}}', "",
     [call(query="g"), call("fetch")]),
    ('```json\n{"name": "search", "arguments": {"query": "h"}}\n```', "", [call(query="h")]),
    ('<|python_tag|>{"type": "function", "name": "search", "parameters": {"query": "i"}}', "", [call(query="i")]),
])
def test_tool_calls_are_read_in_the_usual_shapes(text, left, calls):
    assert parse_tool_calls(text, NAMES) == (left, tuple(calls))


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "search", "arguments": {"query": "broken"</tool_call>',  # malformed JSON
    '<tool_call>{"arguments": {"query": "x"}}</tool_call>',  # no name
    '<tool_call>{"name": "search", "arguments": ["not", "an", "object"]}</tool_call>',
    '{"name": "Alice", "arguments": {"age": 31}}',  # bare JSON naming no offered tool: an answer
    '{"name": "search"}',  # bare JSON without arguments
    'Here is how a call looks: {"name": "search", "arguments": {"query": "x"}}',  # prose around JSON
    '{"name": "search", "arguments": {"query": "x"}} and then some words',
    "The trails near Seoul are busiest at 10am.",
])
def test_what_is_no_call_stays_text(text):
    assert parse_tool_calls(text, NAMES) == (text, ())


def test_a_malformed_block_stays_in_the_text_beside_a_good_one():
    good = '<tool_call>{"name": "search", "arguments": {"query": "ok"}}</tool_call>'
    bad = '<tool_call>{"name": "fetch", "arguments": {</tool_call>'
    assert parse_tool_calls(f"{bad}\n{good}", NAMES) == (bad, (call(query="ok"),))


def test_bare_json_is_a_call_only_when_tools_were_offered():
    text = '{"name": "search", "arguments": {"query": "x"}}'
    assert parse_tool_calls(text) == (text, ())
    completion = Completion(text, 3, 4)
    assert with_tool_calls(completion, Request(({"role": "user", "content": "q"},))) is completion
    parsed = with_tool_calls(completion, Request(({"role": "user", "content": "q"},), tools=(SEARCH,)))
    assert parsed == Completion("", 3, 4, tool_calls=(call(query="x"),))


# -- chat templates --------------------------------------------------------------------------------


def test_which_templates_take_tools():
    assert template_takes_tools(TOOLS_CHAT_TEMPLATE)
    assert not template_takes_tools(CHAT_TEMPLATE)
    assert not template_takes_tools(None)
    assert not template_takes_tools("{{ 'tools are mentioned, never used' }}{% for m in messages %}{{ m.content }}{% endfor %}")
    assert template_takes_tools({"default": CHAT_TEMPLATE, "tool_use": TOOLS_CHAT_TEMPLATE})
    assert template_takes_tools([{"name": "default", "template": TOOLS_CHAT_TEMPLATE}])
    # an extension tag plain Jinja cannot parse: the text is read instead
    assert template_takes_tools("{% generation %}{{ tools }}{% endgeneration %}")


@pytest.fixture(scope="module")
def tools_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny-tools") / "model", tools=True)


def _prompt(backend, request: Request) -> str:
    return backend._tokenizer.decode(backend._encode(request))


@pytest.mark.slow
def test_hf_renders_tools_and_a_continued_conversation_through_the_template(tools_model_dir, tiny_model_dir):
    from bespoke_metric.backends.local.hf_backend import HFBackend

    backend = HFBackend(str(tools_model_dir))
    assert backend.takes_tools
    assert not HFBackend(str(tiny_model_dir)).takes_tools
    question = {"role": "user", "content": "trails near Seoul?"}
    first = _prompt(backend, Request((question,), tools=(SEARCH,)))
    assert f"<tools>\n{json.dumps(SEARCH)}\n</tools>" in first
    assert first.endswith("<|user|>trails near Seoul?<|end|><|assistant|>")
    assert "<tools>" not in _prompt(backend, Request((question,)))

    asked = Completion("", 5, 5, tool_calls=(ToolCall("search", {"query": "Seoul trails"}, ""),))
    turns = (question, assistant_turn(asked), tool_turn(asked.tool_calls[0], "Bukhansan: busy at 10am"))
    second = _prompt(backend, Request(turns, tools=(SEARCH,)))
    # the call rendered with its arguments as an object (not JSON text inside JSON), then its answer
    assert '<|assistant|><tool_call>{"name": "search", "arguments": {"query": "Seoul trails"}}</tool_call><|end|>' in second
    assert second.endswith("<|user|><tool_response>Bukhansan: busy at 10am</tool_response><|end|><|assistant|>")


def test_hf_parses_the_calls_a_model_writes(tools_model_dir):
    """The real tokenizer, chat template, generation loop and decoding; the model's weights are random, so
    its `generate` is scripted to write what a tool-calling model writes."""
    import torch
    import transformers

    from bespoke_metric.backends.local.hf_backend import HFBackend

    tokenizer = transformers.AutoTokenizer.from_pretrained(tools_model_dir)
    scripted = '<tool_call>{"name": "search", "arguments": {"query": "Seoul trails"}}</tool_call>'

    class Scripted(transformers.LlamaForCausalLM):
        def generate(self, input_ids, attention_mask, generation_config, logits_processor=None, stopping_criteria=None):
            reply = tokenizer(scripted, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            return torch.cat([input_ids, torch.tensor([reply] * len(input_ids))], dim=1)

    model = Scripted.from_pretrained(tools_model_dir)
    backend = HFBackend(model, tokenizer=tokenizer)
    requests = [Request(({"role": "user", "content": "trails?"},), tools=(SEARCH,)),
                Request(({"role": "user", "content": "no tools here"},))]
    outcomes: dict[int, object] = {}
    asyncio.run(backend.complete(requests, outcomes.__setitem__))
    assert outcomes[0].tool_calls == (ToolCall("search", {"query": "Seoul trails"}, ""),)
    assert outcomes[0].text == ""
    assert outcomes[1].tool_calls == ()  # offered no tools: the same text is only text
    assert outcomes[1].text == scripted


def test_hf_refuses_tools_its_template_cannot_render(tiny_model_dir):
    from bespoke_metric.backends.local.hf_backend import HFBackend

    backend = HFBackend(str(tiny_model_dir))
    with pytest.raises(ValueError, match="renders no tools"):
        asyncio.run(backend.complete([Request(({"role": "user", "content": "q"},), tools=(SEARCH,))], lambda i, o: None))


def test_template_messages_decode_call_arguments_and_keep_the_rest():
    turn = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                                "function": {"name": "search", "arguments": '{"query": "x"}'}}]}
    (rendered,) = template_messages([turn])
    assert rendered["tool_calls"][0]["function"]["arguments"] == {"query": "x"}
    assert turn["tool_calls"][0]["function"]["arguments"] == '{"query": "x"}'  # the caller's message untouched


# -- openai: native tool calls over HTTP ------------------------------------------------------------------


@pytest.fixture(scope="module")
def openai_server():
    with serve_provider(openai_responder()) as server:
        yield server


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-5"])  # chat completions; the Responses API
def test_openai_tool_calls_and_the_conversation_after_them(openai_server, model):
    backend = make_backend(f"openai:{model}", base_url=openai_server.base_url, api_key="test")
    question = ({"role": "user", "content": "trails near Seoul"},)
    outcomes: dict[int, object] = {}
    asyncio.run(backend.complete([Request(question, tools=(SEARCH,))], outcomes.__setitem__))
    asked = outcomes[0]
    assert asked.tool_calls == (ToolCall("search", {"query": "trails near Seoul"}, "call_1"),)
    body = openai_server.calls[-1].body
    if model == "gpt-5":  # the Responses API's flat function shape, not strict unless asked
        assert body["tools"] == [{"type": "function", "strict": False, **SEARCH["function"]}]
    else:
        assert body["tools"] == [SEARCH]

    follow_up = question + (assistant_turn(asked), tool_turn(asked.tool_calls[0], "Bukhansan is busy at 10am"))
    asyncio.run(backend.complete([Request(follow_up, tools=(SEARCH,))], outcomes.__setitem__))
    assert outcomes[0].text == "answer to trails near Seoul"
    assert outcomes[0].tool_calls == ()
    body = openai_server.calls[-1].body
    if model == "gpt-5":
        assert body["input"][1:] == [
            {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": '{"query": "trails near Seoul"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "Bukhansan is busy at 10am"},
        ]
    else:
        assert body["messages"][1:] == [
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "search", "arguments": '{"query": "trails near Seoul"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "Bukhansan is busy at 10am"},
        ]


def test_calls_a_server_left_in_the_text_are_still_read(openai_server):
    """A `vllm serve` whose tool parser failed returns the model's call as content: it is read as a local
    model's call is; a request that offered no tools keeps the text as it came."""
    written = '<tool_call>{"name": "search", "arguments": {"query": "Seoul"}}</tool_call>'
    with serve_provider(lambda body: written) as server:
        backend = make_backend("openai:Qwen/Qwen3-8B", base_url=server.base_url)
        outcomes: dict[int, object] = {}
        question = ({"role": "user", "content": "trails?"},)
        asyncio.run(backend.complete([Request(question, tools=(SEARCH,)), Request(question)], outcomes.__setitem__))
    assert outcomes[0].tool_calls == (ToolCall("search", {"query": "Seoul"}, ""),)
    assert outcomes[0].text == ""
    assert outcomes[1].tool_calls == ()
    assert outcomes[1].text == written


def test_an_api_call_with_broken_arguments_is_no_call():
    from bespoke_metric.backends.providers.openai_backend import _chat_completion

    body = {"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": "let me look", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"query": '}},
        {"id": "b", "type": "function", "function": {"name": "search", "arguments": '{"query": "ok"}'}}]}}]}
    completion = _chat_completion(body)
    assert completion.tool_calls == (ToolCall("search", {"query": "ok"}, "b"),)
    assert completion.text == "let me look"


# -- across Ray Data rows ----------------------------------------------------------------------------


def test_requests_and_completions_keep_tools_search_and_token_details_as_rows():
    request = Request(({"role": "user", "content": "q"},), 64, None, tools=(SEARCH,), native_search=True)
    assert decode_request(encode_request(request)) == request
    plain = Request(({"role": "user", "content": "q"},), 64)
    assert decode_request(encode_request(plain)) == plain
    completion = Completion("t", 3, 4, cached_input_tokens=2, reasoning_tokens=1, tool_calls=(call(query="x"),),
                            search={"queries": ["x"], "results": [{"url": "https://a.example", "title": "A"}], "cited": []})
    assert row_outcome(outcome_row(7, completion)) == completion
    assert row_outcome(outcome_row(7, Completion("t", 3, 4))) == Completion("t", 3, 4)
