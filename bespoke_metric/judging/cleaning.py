"""What the judge scores of a search-augmented answer: its text without reasoning, citations or URLs.

A system's answer as it comes (`response_raw`) may open with a reasoning block and is strewn with what
search left in it: `[3]` markers, `[text](https://...)` links, bare URLs, `(https://a, https://b)` link
groups, OpenAI's `([domain](https://...))` citations, and a closing list of sources (a heading left with
nothing under it goes too). The official inference removes these before judging, and so does
`clean_response`: the judge (and the response guards) read prose, never a list of URLs. Pure functions.
"""

from __future__ import annotations

import re

from bespoke_metric.backends.reasoning import strip_reasoning

_URL = r"(?:https?://|www\.)[^\s<>()\[\]{}\"']+(?:\([^\s()]*\)[^\s<>()\[\]{}\"']*)*"
_MARKER = r"(?:\[\^?\d+(?:\s*[,;–-]\s*\d+)*\]|【\d+(?:[†:][^】]*)?】)"
_LINK_TARGET = r"\((?:<[^>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"\n]*\")?\)"
_LINK = re.compile(rf"\[([^\[\]\n]*)\]{_LINK_TARGET}")
_LINKS_GROUP = re.compile(rf"\(\s*\[[^\[\]\n]*\]{_LINK_TARGET}(?:\s*[,;]?\s*(?:and\s+)?\[[^\[\]\n]*\]{_LINK_TARGET})*\s*\)")
"""Links in parentheses and nothing else, as OpenAI's web search cites: `([trails.example](https://...))`."""
_LINK_LABEL_DROPPED = re.compile(rf"^\s*(?:\^?\d+|{_URL}|source|link|here)?\s*$", re.I)
_GROUP = re.compile(rf"\(\s*(?:(?:sources?|see|via|from|cf\.)\s*:?\s*)?(?:{_URL}|{_MARKER})(?:\s*[,;]?\s*(?:and\s+)?(?:{_URL}|{_MARKER}))*\s*\)", re.I)
_BARE = re.compile(rf"<?{_URL}>?")
_EMPTY_GROUP = re.compile(r"\(\s*[,;]?\s*\)")
_SOURCE = re.compile(rf"{_URL}|\]\([^)\s]+\)|{_MARKER}")
"""What marks a line as listing sources: a URL, a Markdown link, a citation marker."""
_LINK_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])?\s*(?:\[[^\]\n]*\]\([^)\s]*\)\s*[.,;]?\s*)+$")
"""A line that is nothing but Markdown links: an entry of a list of sources."""
_MARKERS = re.compile(_MARKER)
_TRAILING_PUNCTUATION = ".,;:!?"
_CODE_SPAN = re.compile(r"(`[^`\n]*`)")
_LEFT_EMPTY = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)?\s*[-–:,;.|]*\s*$")
_DANGLING_LABEL = re.compile(r"[ \t]*\b(?:sources?|references?|citations?|see|via)[ \t]*:[ \t]*$", re.I)
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s|$)")
_SOURCES_HEADING = re.compile(r"^\s*(?:#+\s*)?[*_]*(?:sources?|references?|citations?|links?|further reading)[*_]*\s*:?\s*[*_]*\s*$", re.I)


def _link(match: re.Match[str]) -> str:
    label = match.group(1)
    return "" if _LINK_LABEL_DROPPED.match(label) else label


def _bare(match: re.Match[str]) -> str:
    # a URL ending a sentence keeps the sentence's full stop
    url = match.group(0)
    kept = len(url.rstrip(_TRAILING_PUNCTUATION + ">"))
    return url[kept:].lstrip(">")


def _clean_prose(text: str) -> str:
    text = _LINKS_GROUP.sub("", text)  # before the links: their labels would be left in parentheses
    text = _LINK.sub(_link, text)
    text = _GROUP.sub("", text)
    text = _BARE.sub(_bare, text)
    return _EMPTY_GROUP.sub("", _MARKERS.sub("", text))


def _without_source_lists(lines: list[str]) -> list[str | None]:
    """The lines with every list of sources dropped (None in its place): a sources heading with the lines
    under it that cite (blank lines between them included), and lines that are nothing but links."""
    kept: list[str | None] = []
    index = 0
    while index < len(lines):
        if _SOURCES_HEADING.match(lines[index]):
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or _SOURCE.search(lines[end])):
                end += 1
            if any(_SOURCE.search(line) for line in lines[index + 1 : end]):
                kept += [None] * (end - index)
                index = end
                continue
        kept.append(None if _LINK_ITEM.match(lines[index]) else lines[index])
        index += 1
    return kept


def _without_emptied_headings(lines: list[str | None]) -> list[str]:
    """The lines left (None marks one dropped), without the headings whose section held only what was
    dropped: a heading that was empty to begin with stays."""
    kept = []
    for index, line in enumerate(lines):
        heading = _HEADING.match(line) if line is not None else None
        if heading is not None:
            section = []
            for after in lines[index + 1 :]:
                other = _HEADING.match(after) if after is not None else None
                if other is not None and len(other.group(1)) <= len(heading.group(1)):
                    break
                section.append(after)
            if None in section and all(after is None or not after.strip() for after in section):
                continue
        if line is not None:
            kept.append(line)
    return kept


def _clean_line(line: str) -> str | None:
    """The line cleaned outside its inline code spans (`x = [1, 2]` is code, not a citation); None when
    all it held was sources."""
    parts = _CODE_SPAN.split(line)
    cleaned = "".join(part if index % 2 else _clean_prose(part) for index, part in enumerate(parts))
    if cleaned == line:
        return line
    cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
    cleaned = re.sub(r"(?<=\S)[ \t]{2,}", " ", cleaned).rstrip()
    cleaned = _DANGLING_LABEL.sub("", cleaned)  # "Source:" whose URL is gone
    return None if _LEFT_EMPTY.match(cleaned) else cleaned


def _segments(lines: list[str]) -> list[tuple[bool, list[str]]]:
    """Runs of consecutive lines, each inside code fences (True, the fences included) or outside."""
    segments: list[tuple[bool, list[str]]] = []
    in_code = False
    for line in lines:
        fence = line.lstrip().startswith("```")
        code = in_code or fence
        if not segments or segments[-1][0] != code:
            segments.append((code, []))
        segments[-1][1].append(line)
        in_code = in_code != fence
    return segments


def strip_citations(text: str) -> str:
    """`text` without citation markers (`[1]`, `[2, 3]`, `[^4]`, `【5†source】`), link groups, URLs
    (a Markdown link keeps its words), lists of sources, and the lines and headings left empty by that. Code (fenced
    blocks, inline spans) is left as it is."""
    marked: list[str | None] = []  # None: a line dropped
    for code, part in _segments(text.splitlines()):
        if code:
            marked += part
        else:
            marked += [None if line is None else _clean_line(line) for line in _without_source_lists(part)]
    lines = _without_emptied_headings(marked)
    while lines and (not lines[-1].strip() or _SOURCES_HEADING.match(lines[-1])):
        lines.pop()  # a sources heading whose list is gone
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def clean_response(raw: str) -> str:
    """The answer the judge scores: `raw` without its reasoning block and without citations and URLs.

    Raises `ParseError` when a reasoning block opens and never closes (there is no answer)."""
    return strip_citations(strip_reasoning(raw))
