"""The plain-text part of a message, made from its HTML body.

Scripts, styles, the head and the title are dropped, links become `text (url)`, line breaks and block ends become
new lines, other tags are removed and entities decoded. Every step reads the body a bounded number of times
whatever it holds: the regular expressions this replaces scanned ahead from every `<a`, `<style` or `<` to an end
that was not there (260 KB of such openings took 40 s).
"""

import html as html_lib
import re
from collections.abc import Callable, Iterator

from core.scan import NextMatch, NextOccurrence

_INVISIBLE_OPENING = re.compile(r"<(script|style|head|title)", re.IGNORECASE)
_INVISIBLE_CLOSINGS = {
    name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in ("script", "style", "head", "title")
}
_LINK_OPENING = re.compile(r"<a\s", re.IGNORECASE)
_LINK_HREF = re.compile(r"""href\s*=\s*["']""", re.IGNORECASE)
_LINK_VALUE = re.compile(r"""[^"']++""")
_LINK_CLOSING = re.compile(r"</a\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]++>")
_BLOCK_END = re.compile(r"</(p|div|h[1-6]|li|tr|table|blockquote|section|article|header|footer)\s*>", re.I)
_BREAK = re.compile(r"<br\s*/?>", re.I)
# Runs of spaces after the other blanks became spaces (str.replace): a pattern matching every blank itself stopped at
# each single space of the text and was two thirds of the text part's cost.
_SPACE_RUNS = re.compile("  +")
_BLANK_LINES = re.compile(r"\n\s*\n\s*\n+")


def _replace(text: str, spans: Iterator[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) of `spans` (in order, not overlapping) put in."""
    parts, copied = [], 0
    for start, end, replacement in spans:
        parts += [text[copied:start], replacement]
        copied = end
    return "".join([*parts, text[copied:]]) if parts else text


def _invisible(html: str):
    """`<script ...>...</script>` (style, head, title): from the opening to the first closing of the same name
    after the opening's `>`, as the pattern `<(script|...)[^>]*>.*?</\\1\\s*>` matches (`<header>` opens a head)."""
    tag_end = NextOccurrence(html, ">")
    closings: dict[str, NextMatch] = {}
    position = 0
    while opening := _INVISIBLE_OPENING.search(html, position):
        end = tag_end.at_or_after(opening.end())
        if end < 0:
            return  # no opening after this one has a `>` either
        name = opening.group(1).lower()
        if name not in closings:
            closings[name] = NextMatch(_INVISIBLE_CLOSINGS[name], html)
        closing = closings[name].at_or_after(end + 1)
        if closing is None:
            position = opening.start() + 1
            continue
        yield opening.start(), closing.end(), ""
        position = closing.end()


def _links(html: str, describe: Callable[[str, str], str]):
    """`<a ... href="url" ...>text</a >` as `describe(text, url)`, as the pattern
    `<a\\s[^>]*?href\\s*=\\s*["']([^"']+)["'][^>]*>(.*?)</a\\s*>` matches: for each `<a`, its `href=` attributes before
    its first `>` in order; the first with a value, a `>` after the value and a closing `</a>` after that wins."""
    tag_end = NextOccurrence(html, ">")
    closings = NextMatch(_LINK_CLOSING, html)
    position = 0
    while opening := _LINK_OPENING.search(html, position):
        end = tag_end.at_or_after(opening.end())
        for href in _LINK_HREF.finditer(html, opening.end(), len(html) if end < 0 else end):
            value = _LINK_VALUE.match(html, href.end())
            if value is None or value.end() == len(html):
                continue  # an empty value, or one that no quote closes
            content_start = tag_end.at_or_after(value.end() + 1)
            closing = closings.at_or_after(content_start + 1) if content_start >= 0 else None
            if closing is None:
                return  # no later link can have a `>` and a closing tag after it either
            yield opening.start(), closing.end(), describe(html[content_start + 1 : closing.start()], value.group())
            position = closing.end()
            break
        else:
            if end < 0:
                return
            position = end + 1


def _without_tags(text: str) -> str:
    """`text` without its tags (`<` to the next `>`). After the last `>` no `<` can close, so the pattern only reads
    up to it: each `<` before it either ends at the next `>` or is `<>`."""
    end = text.rfind(">") + 1
    return _TAG.sub("", text) if end == len(text) else _TAG.sub("", text[:end]) + text[end:]


def html_to_text(html: str) -> str:
    """A readable plain-text part for an HTML body: links kept as `text (url)`, blocks on their own lines."""
    text = _replace(html, _invisible(html))
    text = _replace(text, _links(text, lambda content, url: f"{_without_tags(content).strip()} ({url})"))
    text = _BREAK.sub("\n", text)
    text = _BLOCK_END.sub("\n\n", text)
    text = html_lib.unescape(_without_tags(text))
    text = _SPACE_RUNS.sub(" ", text.replace("\t", " ").replace("\r", " ").replace("\f", " ").replace("\v", " "))
    lines = (line.strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip() + "\n"
