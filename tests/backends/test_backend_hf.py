"""The `hf:` backend end to end on a tiny random Llama built in place (CPU, float32)."""

from __future__ import annotations

import asyncio
import json
import sys

import jsonschema
import pytest
import torch
import transformers

from bespoke_dataset.errors import MissingExtraError
from bespoke_metric.backends.base import Completion, Request, messages_with_schema
from bespoke_metric.backends.local import hf_backend
from bespoke_metric.backends.local.hf_backend import HFBackend
from bespoke_metric.backends.options import HFOptions
from bespoke_metric.backends.registry import make_backend
from bespoke_metric.calls.scheduler import run_requests_sync
from bespoke_metric.judging.protocol import CLAIM_SCHEMA, PERSONALIZATION_SCHEMA, bounded_schema

PROMPTS = [
    "hi",
    "Explain the rubric in plain words, with one example, for a user who hikes near Seoul on weekends.",
    "budget?",
    "Need Alignment Score: 4 <|end|> is text here, not a control token",
    "A personalized answer uses what the user already knows.",
    "0123456789",
    "tone and explanation style",
]


def requests() -> list[Request]:
    return [
        Request(messages=({"role": "system", "content": "judge"}, {"role": "user", "content": p}), max_tokens=3 + 2 * i)
        for i, p in enumerate(PROMPTS)
    ]


def complete(backend, reqs) -> dict[int, Completion]:
    outcomes: dict[int, Completion] = {}

    def on_done(index, outcome):
        assert index not in outcomes, f"on_done called twice for {index}"
        outcomes[index] = outcome

    asyncio.run(backend.complete(reqs, on_done))
    assert sorted(outcomes) == list(range(len(reqs)))
    return outcomes


def greedy_reference(model_dir, request: Request) -> Completion:
    """What transformers itself generates for one request: its chat template, greedy, no batch or padding,
    the request's own token limit, cut at the end-of-turn token."""
    import inspect

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    options = {"add_generation_prompt": True, "tokenize": True, "return_dict": False}
    if "sanitize_control_tokens" in inspect.signature(tokenizer.apply_chat_template).parameters:
        options["sanitize_control_tokens"] = True  # text that spells a control token stays text
    prompt = list(tokenizer.apply_chat_template(list(messages_with_schema(request)), **options))
    with torch.inference_mode():
        output = model.generate(input_ids=torch.tensor([prompt]), max_new_tokens=request.max_tokens, do_sample=False,
                                pad_token_id=tokenizer.pad_token_id)
    new = output[0, len(prompt):].tolist()
    stop = new.index(tokenizer.eos_token_id) if tokenizer.eos_token_id in new else len(new)
    return Completion(tokenizer.decode(new[:stop], skip_special_tokens=True), input_tokens=len(prompt),
                      output_tokens=min(stop + 1, len(new)), truncated=stop == len(new))


@pytest.mark.slow
def test_generates_end_to_end_through_the_scheduler(tiny_model_dir):
    backend = make_backend(f"hf:{tiny_model_dir}")
    results = run_requests_sync(backend, requests())
    expected = [greedy_reference(tiny_model_dir, request) for request in requests()]
    assert [r.error for r in results] == [None] * len(PROMPTS)
    assert [r.text for r in results] == [e.text for e in expected]
    assert any(e.text for e in expected)
    identity = backend.identity()
    assert identity["engine"] == "hf"
    assert identity["model"] == str(tiny_model_dir)
    assert identity["settings"]["do_sample"] is False
    assert identity["settings"]["dtype"] == "float32"


@pytest.mark.slow
def test_batched_left_padded_equals_one_at_a_time(tiny_model_dir):
    reqs = requests()
    batched = complete(HFBackend(str(tiny_model_dir), HFOptions(batch_size=4)), reqs)
    single = complete(HFBackend(str(tiny_model_dir), HFOptions(batch_size=1)), reqs)
    assert [batched[i] for i in range(len(reqs))] == [single[i] for i in range(len(reqs))]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    for i, request in enumerate(reqs):
        assert batched[i].output_tokens <= request.max_tokens
        # The prompt is the chat template's rendering, generation prompt included.
        expected = tokenizer.apply_chat_template(
            list(request.messages), add_generation_prompt=True, tokenize=True, return_dict=False, sanitize_control_tokens=True
        )
        assert batched[i].input_tokens == len(expected)


@pytest.mark.slow
def test_matches_plain_generate_on_one_prompt(tiny_model_dir):
    request = requests()[1]
    outcome = complete(HFBackend(str(tiny_model_dir)), [request])[0]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    ids = tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, return_tensors="pt", return_dict=True)
    generated = model.generate(**ids, max_new_tokens=request.max_tokens, do_sample=False)[0, ids["input_ids"].shape[1]:]
    assert outcome.text == tokenizer.decode(generated, skip_special_tokens=True)


def test_control_tokens_in_content_stay_text(tiny_model_dir):
    backend = HFBackend(str(tiny_model_dir))
    ids = backend._encode(requests()[3])
    end_id = backend._tokenizer.convert_tokens_to_ids("<|end|>")
    assert ids.count(end_id) == 2  # after the system and the user turn, none from the content


@pytest.mark.slow
def test_json_schema_goes_into_the_prompt(tiny_model_dir):
    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"}}}
    plain = Request(messages=({"role": "user", "content": "claim?"},), max_tokens=3)
    with_schema = Request(messages=plain.messages, max_tokens=3, json_schema=schema)
    messages = messages_with_schema(with_schema)
    assert messages[-1]["content"].startswith("claim?")
    assert '"verdict"' in messages[-1]["content"]
    outcomes = complete(HFBackend(str(tiny_model_dir)), [plain, with_schema])
    assert outcomes[1].input_tokens > outcomes[0].input_tokens


@pytest.mark.slow
def test_a_grammar_holds_a_random_model_to_the_schema_and_ends_its_answer(tiny_model_dir):
    """Left to itself a random model writes no JSON; held by xgrammar's grammar of the bounded schema, it writes
    an answer the schema takes and ends it within its token limit, whatever it would have rambled. A request
    without a schema goes in a batch of its own and comes out as without the grammar."""
    judge = ({"role": "system", "content": "judge"}, {"role": "user", "content": "Does the answer convey the claim?"})
    claim = Request(messages=judge, max_tokens=96, json_schema=CLAIM_SCHEMA)
    judgment = Request(messages=judge, max_tokens=420, json_schema=PERSONALIZATION_SCHEMA)
    plain = requests()[1]
    backend = HFBackend(str(tiny_model_dir), HFOptions(grammar=True, batch_size=4))
    held = complete(backend, [claim, plain, judgment])
    for index, request in ((0, claim), (2, judgment)):
        outcome = held[index]
        assert not outcome.truncated and outcome.output_tokens <= request.max_tokens
        jsonschema.validate(json.loads(outcome.text), bounded_schema(request.json_schema, request.max_tokens))
    assert list(json.loads(held[2].text)) == list(PERSONALIZATION_SCHEMA["properties"])  # reasoning first
    free = complete(HFBackend(str(tiny_model_dir)), [claim, plain])
    with pytest.raises(json.JSONDecodeError):
        json.loads(free[0].text)
    assert held[1] == free[1]
    assert (backend.constraint, backend.identity()["settings"]["schema"]) == ("grammar", "grammar")
    assert HFBackend(str(tiny_model_dir)).identity()["settings"]["schema"] == "in prompt"  # as before grammars


def test_a_row_held_to_a_grammar_cut_off_at_its_own_limit_leaves_the_batch_running(tiny_model_dir):
    """A row stopped at its own limit before its end of turn would be given padding, which xgrammar's processor
    refuses for a grammar not yet ended: in a batch held to grammars it runs on to the batch's end and is
    reported cut to its limit, and the other rows end as they would alone."""
    judge = ({"role": "system", "content": "judge"}, {"role": "user", "content": "Does the answer convey the claim?"})
    cut = Request(messages=judge, max_tokens=3, json_schema=PERSONALIZATION_SCHEMA)  # too short for any judgment
    whole = Request(messages=judge, max_tokens=420, json_schema=PERSONALIZATION_SCHEMA)
    outcomes = complete(HFBackend(str(tiny_model_dir), HFOptions(grammar=True, batch_size=2)), [cut, whole])
    assert outcomes[0].truncated and outcomes[0].output_tokens == 3
    assert outcomes[1] == complete(HFBackend(str(tiny_model_dir), HFOptions(grammar=True, batch_size=1)), [whole])[0]


def test_a_grammar_without_xgrammar_names_the_extra(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "xgrammar", None)  # what an environment without the extra imports
    backend = HFBackend(str(tiny_model_dir), HFOptions(grammar=True))
    assert complete(backend, [requests()[0]])[0].text  # a request without a schema needs no grammar
    with pytest.raises(MissingExtraError, match=r"pip install 'bespoke-eval\[grammar\]' \(or --no-grammar"):
        complete(backend, [Request(messages=requests()[0].messages, json_schema=CLAIM_SCHEMA)])


@pytest.mark.slow
def test_outcomes_arrive_per_batch_while_the_loop_runs(tiny_model_dir):
    backend = HFBackend(str(tiny_model_dir), HFOptions(batch_size=2))
    reqs = requests()
    ticks = 0
    arrivals: list[tuple[int, int]] = []

    async def main():
        nonlocal ticks
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await backend.complete(reqs, lambda i, o: arrivals.append((i, ticks)))
        stop.set()
        await task

    asyncio.run(main())
    assert sorted(i for i, _ in arrivals) == list(range(len(reqs)))
    assert arrivals[0][1] > 0  # the event loop kept running while the first batch generated
    # Four batches of at most two: outcomes land batch by batch, longest prompts first.
    first_batch = {i for i, _ in arrivals[:2]}
    assert 1 in first_batch


@pytest.mark.slow
def test_out_of_memory_halves_the_batch(tiny_model_dir, monkeypatch):
    backend = HFBackend(str(tiny_model_dir), HFOptions(batch_size=8))
    real_generate = backend._generate
    sizes: list[int] = []

    def generate(prompts, max_tokens, grammars, report, stop):
        sizes.append(len(prompts))
        if len(prompts) > 2:  # stands in for a GPU running out of memory
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        real_generate(prompts, max_tokens, grammars, report, stop)

    monkeypatch.setattr(backend, "_generate", generate)
    outcomes = complete(backend, requests())
    assert sizes[:3] == [7, 4, 2]
    assert set(sizes[3:]) <= {1, 2}
    assert outcomes == complete(HFBackend(str(tiny_model_dir), HFOptions(batch_size=1)), requests())  # nothing lost or changed


def test_preloaded_model_and_tokenizer(tiny_model_dir):
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    backend = HFBackend(model, tokenizer=tokenizer)
    assert backend.identity()["model"] == str(tiny_model_dir)
    reference = complete(HFBackend(str(tiny_model_dir)), requests()[:2])
    assert complete(backend, requests()[:2]) == reference
    with pytest.raises(ValueError, match="tokenizer"):
        HFBackend(model)


def test_make_backend_errors():
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        make_backend("tgi:some-model")
    with pytest.raises(ValueError, match="ENGINE:MODEL"):
        make_backend("gpt-5")
    with pytest.raises(ValueError, match="--base-url does not apply to the hf engine"):
        make_backend("hf:some/model", base_url="http://x")


def test_a_row_lands_when_it_ends_and_a_cancelled_batch_stops_keeping_it(tiny_model_dir, monkeypatch):
    """Ctrl-C cancels the run: the batch stops at its next step instead of generating to its end in a thread
    nobody waits for, and the answer of the row that had ended in it is delivered, not thrown away."""
    monkeypatch.setattr(hf_backend, "REPORT_EVERY_S", 0.0)  # look at the batch after every step
    backend = HFBackend(str(tiny_model_dir), HFOptions(batch_size=2))
    short, long = (Request(messages=({"role": "user", "content": "hi"},), max_tokens=limit) for limit in (2, 4000))
    steps = 0
    forward = backend._model.forward

    def counted(*args, **kwargs):
        nonlocal steps
        steps += 1
        return forward(*args, **kwargs)

    backend._model.forward = counted
    landed: dict[int, Completion] = {}

    async def main():
        task = asyncio.current_task()

        def on_done(index, outcome):
            landed[index] = outcome
            task.cancel()  # the user presses Ctrl-C as the first answer lands

        await backend.complete([long, short], on_done)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert list(landed) == [1]  # the short answer landed while its batch was still generating
    assert landed[1] == complete(HFBackend(str(tiny_model_dir)), [short])[0]
    assert steps < long.max_tokens  # the long one was stopped, not generated to its limit


def test_on_a_cpu_short_prompts_share_one_batch_and_long_ones_what_memory_fits(tiny_model_dir, monkeypatch):
    backend = HFBackend(str(tiny_model_dir))
    sizes: list[int] = []
    real_generate = backend._generate

    def generate(prompts, max_tokens, grammars, report, stop):
        sizes.append(len(prompts))
        real_generate(prompts, max_tokens, grammars, report, stop)

    monkeypatch.setattr(backend, "_generate", generate)
    short = [Request(messages=({"role": "user", "content": f"question {i}"},), max_tokens=3) for i in range(20)]
    complete(backend, short)
    assert sizes == [20]  # more than the eight of a fixed CPU batch: one step serves them all
    config = backend._model.config
    row = 500 * hf_backend._bytes_per_token(config, "float32") + hf_backend._bytes_for_logits(config)
    monkeypatch.setattr(hf_backend, "CPU_BATCH_BYTES", 12 * row)
    assert backend._batch_size_for(500) == 12
    assert backend._batch_size_for(1000) == hf_backend.CPU_MIN_BATCH  # never fewer rows than that
