"""The systems' prompts: whole templates in one module, rendered exactly, and a version derived from them."""

from __future__ import annotations

import re
from collections.abc import Mapping

from bespoke_metric.systems import prompts
from bespoke_metric.systems.prompts import (
    GENERATION_PROMPT_VERSION,
    PROFILER_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    TEMPLATES,
    answer_request,
    expansion_request,
    merge_request,
    notes_request,
    prompt_version,
)


def test_every_template_of_the_module_is_in_the_version() -> None:
    constants = {
        name: value
        for name, value in vars(prompts).items()
        if name.isupper() and isinstance(value, (str, Mapping)) and name not in ("TEMPLATES", "GENERATION_PROMPT_VERSION")
    }
    assert set(constants) == set(TEMPLATES)
    assert all(TEMPLATES[name] is value for name, value in constants.items())
    assert GENERATION_PROMPT_VERSION == prompt_version(TEMPLATES)
    assert re.fullmatch(r"[0-9a-f]{12}", GENERATION_PROMPT_VERSION)


def test_a_changed_word_in_any_template_changes_the_version() -> None:
    for name, value in TEMPLATES.items():
        if isinstance(value, str):
            changed = value + " "
        else:
            first = next(iter(value))
            changed = {**value, first: value[first] + " "}
        assert prompt_version({**TEMPLATES, name: changed}) != GENERATION_PROMPT_VERSION, name


def test_the_answer_request_leaves_out_empty_parts() -> None:
    bare = answer_request("how wet should my starter be", "", "", 64)
    assert bare.messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert bare.messages[1]["content"] == "Question: how wet should my starter be"
    assert bare.max_tokens == 64
    full = answer_request("q?", "What is known about this user:\nBakes.", "Search results:\n\n[1] Guide\nText.", 64)
    assert full.messages[1]["content"] == "What is known about this user:\nBakes.\n\nSearch results:\n\n[1] Guide\nText.\n\nQuestion: q?"


def test_profiler_requests_name_the_part_of_the_log_and_the_question() -> None:
    single = notes_request(("[search] sourdough",), 0, None, 32)
    assert single.messages[0] == {"role": "system", "content": PROFILER_SYSTEM_PROMPT}
    assert single.messages[1]["content"].startswith("Activity log:\n[search] sourdough\n\nDescribe this person in at most 200 words")
    second = notes_request(("a", "[chat] rust lifetimes"), 1, "how do lifetimes work", 32)
    assert second.messages[1]["content"].startswith(
        'Activity log, part 2 of 2:\n[chat] rust lifetimes\n\nThis person now asks: "how do lifetimes work"\nIn at most 200 words'
    )

    merged = merge_request([" Bakes. ", "Codes in Rust."], None, 32).messages[1]["content"]
    assert merged.startswith("Notes from part 1 of the log:\nBakes.\n\nNotes from part 2 of the log:\nCodes in Rust.\n\nMerge these notes")
    assert merged.endswith("without repeating yourself.")
    aware = merge_request(["Bakes."], "which flour", 32).messages[1]["content"]
    assert aware.endswith('without repeating yourself. Keep only what helps answer: "which flour"')


def test_expansion_requests_carry_the_query() -> None:
    cot = expansion_request("espresso grinder", "cot", 16)
    assert len(cot.messages) == 1
    assert cot.messages[0]["content"].startswith('A person asked a search assistant: "espresso grinder"')
    assert "Search terms:" in cot.messages[0]["content"]
    pseudo = expansion_request("espresso grinder", "pseudo-history", 16).messages[0]["content"]
    assert pseudo.startswith('Before asking "espresso grinder"')
