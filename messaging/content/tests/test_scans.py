"""Every scan of a body or template is linear in its size (docs/security.md), and gives what the patterns it replaced
gave: hostile inputs of hundreds of kilobytes answer within moments, and generated inputs are compared with the
old patterns (kept here as the reference) and with python-liquid's own lexers."""

import contextlib
import html as html_lib
import random
import re
import time

import pytest
from django.conf import settings
from liquid import Environment
from liquid.builtin.expressions import tokenize as library_tokenize_expression
from liquid.builtin.tags.liquid_tag import LiquidTag
from liquid.exceptions import LiquidError
from liquid.lex import get_lexer
from liquid.token import TOKEN_EXPRESSION, Token

from core.errors import ValidationFailed
from messaging.content import rendering
from messaging.content.lexing import tokenize_expression, tokenize_liquid_lines, tokenize_template
from messaging.engagement import tracking
from messaging.sending.mime import html_to_text
from messaging.vocabulary import insert_before_body_end

# Each input takes 0.3 s or less on an idle machine of two cores, and took 11 to 125 s with the patterns these scans
# replaced: the bound leaves room for a machine busy with other work and still catches a scan that is not linear.
BOUND_SECONDS = 3.0


def quickly(run, *args, **kwargs):
    # The thread's CPU time: a backtracking pattern burns it whatever else the machine runs, which wall time is not.
    started = time.thread_time()
    # Hostile templates may well be invalid: what matters is how soon that is known.
    with contextlib.suppress(LiquidError, ValidationFailed):
        run(*args, **kwargs)
    elapsed = time.thread_time() - started
    assert elapsed < BOUND_SECONDS, f"{elapsed:.2f} s"


@pytest.mark.parametrize(
    ("run", "text"),
    [
        # The legacy-form rewrite (`_OUTPUT_TAG`): 80 KB of `{{` took 125 s.
        (rendering.preprocess, "{{" * 150_000),
        # The plain-substitution fallback: cubic in a run of spaces after `{{`.
        (lambda text: rendering.render(text, {}, html=True, lenient=True), "{% if %}{{" + " " * 300_000),
        # Liquid's own lexers: an unclosed `{{` or `{%` then spaces, `(` without `..`, `["` without `"]`, an unclosed
        # raw block, a `{% liquid %}` line ending in spaces.
        (lambda text: rendering.check_syntax(field="body", source=text, html=True), "{{" + " " * 300_000),
        (lambda text: rendering.check_syntax(field="body", source=text, html=True), "{% if" + " " * 300_000),
        (lambda text: rendering.check_syntax(field="body", source=text, html=True), "{{ " + "(" * 300_000 + " }}"),
        (lambda text: rendering.check_syntax(field="body", source=text, html=True), "{{ a" + '["a" ' * 60_000 + "}}"),
        (lambda text: rendering.check_syntax(field="body", source=text, html=True), "{% raw %}" * 30_000),
        (
            lambda text: rendering.check_syntax(field="body", source=text, html=True),
            "{% liquid\nassign a = 1" + " " * 300_000 + "x\n%}",
        ),
        # Link tracking: 60 KB of `<a ` took 11 s.
        (lambda text: tracking.with_tracking(text, email_id="e"), "<a " * 100_000),
        (lambda text: tracking.with_tracking(text, email_id="e"), '<a href="http://' + " " * 300_000),
        (lambda text: tracking.with_tracking(text, email_id="e"), "<a href='http://x.test/\"" * 20_000),
        # The text part: 260 KB took 40 s.
        (html_to_text, "<" * 300_000),
        (html_to_text, "<a " * 100_000),
        (html_to_text, '<a href="x">' * 25_000),
        (html_to_text, "<style>" * 40_000),
        (html_to_text, "<script>x</style>" * 20_000),
    ],
)
def test_a_hostile_input_is_scanned_quickly(run, text):
    quickly(run, text)


# The patterns as they were, for the comparisons below.
_OLD_OUTPUT_TAG = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.S)
_OLD_PLAIN_VARIABLE = re.compile(r"\{\{\s*([^{}|?]+?)\s*\}\}")
_OLD_TRACKED_LINK = re.compile(r"""(<a\b[^>]*?\shref\s*=\s*)(["'])\s*(https?://[^"']*?)\s*\2""", re.I | re.S)
_OLD_TEXT_LINK = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"'][^>]*>(.*?)</a\s*>", re.I | re.S)
_OLD_INVISIBLE = re.compile(r"<(script|style|head|title)[^>]*>.*?</\1\s*>", re.I | re.S)
_OLD_TAG = re.compile(r"<[^>]+>")


def _old_rewrite_output(match: re.Match) -> str:
    open_trim, inner, close_trim = match.groups()
    legacy = re.match(r"^(?P<head>.*?)\?\?(?P<fallback>.*)$", inner, re.S)
    if legacy and "|" not in legacy["head"]:
        inner = f"{legacy['head'].rstrip()} | default: {legacy['fallback'].strip()} "
    head, bar, rest = inner.partition("|")
    spaced = re.match(r"^\s*([A-Za-z_][\w-]*(?: +[\w-]+)+)\s*$", head)
    if spaced:
        head = f' ["{spaced.group(1)}"] '
    return "{{" + open_trim + head + bar + rest + close_trim + "}}"


def _old_html_to_text(html: str) -> str:
    text = _OLD_INVISIBLE.sub("", html)
    text = _OLD_TEXT_LINK.sub(lambda m: f"{_OLD_TAG.sub('', m.group(2)).strip()} ({m.group(1)})", text)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.I)
    text = re.sub(
        r"</(p|div|h[1-6]|li|tr|table|blockquote|section|article|header|footer)\s*>", "\n\n", text, flags=re.I
    )
    text = html_lib.unescape(_OLD_TAG.sub("", text))
    text = re.sub("  +", " ", text.replace("\t", " ").replace("\r", " ").replace("\f", " ").replace("\v", " "))
    lines = (line.strip() for line in text.split("\n"))
    return re.sub(r"\n\s*\n\s*\n+", "\n\n", "\n".join(lines)).strip() + "\n"


def _old_with_tracking(html: str) -> str:
    def rewrite(match):
        target = html_lib.unescape(match.group(3))
        if tracking._own_page(target):
            return match.group(0)
        quote = match.group(2)
        return f"{match.group(1)}{quote}{settings.PUBLIC_URL}/c/{tracking.click_token('e', target)}{quote}"

    pixel = (
        f'<img src="{settings.PUBLIC_URL}/o/{tracking.open_token("e")}" width="1" height="1" alt="" '
        'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />'
    )
    return insert_before_body_end(_OLD_TRACKED_LINK.sub(rewrite, html), pixel)


def _generated(pieces: list[str], count: int, longest: int, seed: int = 7):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, longest)))


_TEMPLATE_PIECES = [
    *(
        [
            "{{",
            "}}",
            "{%",
            "%}",
            "-}}",
            "{{-",
            "-%}",
            "{%-",
            "-",
            "raw",
            "endraw",
            "doc",
            "enddoc",
            "comment",
            "endcomment",
            "if",
            "liquid",
            "#",
            "x",
            "a",
            "é",
            "{",
            "}",
            "%",
            "..",
            "(",
            ")",
            "[",
            "]",
        ]
    ),
    *(" ", "  ", "\n", "\t", "\r", '"', "'", "|", "??", "first name", "\u00a0", "\x0b"),
]
_EXPRESSION_PIECES = [
    *(
        [
            "(",
            ")",
            "[",
            "]",
            "..",
            ".",
            "1",
            "-1",
            "1.",
            "2.5",
            "a",
            "b-c",
            "x?",
            "|",
            "||",
            ":",
            ",",
            "==",
            "!=",
            "<>",
            "<",
            ">=",
            "!",
            "=",
            "and",
            "or",
            "true",
            "nil",
            "in",
            "contains",
            "\\",
            "#",
            "%",
            "{",
            "}",
        ]
    ),
    *(" ", "\n", "\t", "\r", '"', "'", "é", "\u00a0", "1..2", "[0]", "['a']", '["b"]', "[ 1 ]", "-"),
]
_HTML_PIECES = [
    *(
        [
            "<a",
            "<A",
            "href",
            "HREF",
            "=",
            ">",
            "</a>",
            "</A",
            ">",
            "<",
            "text",
            "<b>",
            "</b>",
            "<script>",
            "</script>",
            "<style",
            "</style>",
            "<head>",
            "</head>",
        ]
    ),
    *(["<header>", "<title>", "</TITLE>", "<br>", "<br/>", "</p>", "<p>", "&amp;", "data-href", "<ab", "x", "-"]),
    *(" ", "  ", "\n", "<a\t", '"', "'", "\u00a0", "http://x.test/a", "https://y.test/?a=1&amp;b=2", "mailto:z"),
    *(' href="http://x.test/a"', " href='https://y.test/'", ' HREF = " http://z.test/p?q=1&amp;r=2 "', ' href=""'),
    *('<a href="http://a.test">', "<a class='c' href='http://b.test/x'>", ' href="mailto:z"', "</a>"),
    f' href="{settings.PUBLIC_URL}/unsubscribe/t"',
]


def _outcome(run):
    try:
        return [tuple(token) for token in run()]
    except LiquidError as exc:
        return (type(exc).__name__, str(exc))


def test_the_template_lexers_give_the_librarys_tokens_and_errors():
    library_template, library_lines = get_lexer(), LiquidTag(Environment())._tokenize
    for text in _generated(_TEMPLATE_PIECES, 4000, 25):
        assert _outcome(lambda: tokenize_template(text)) == _outcome(lambda: library_template(text)), text
        parent = Token(TOKEN_EXPRESSION, text, start_index=3, source=f"xx {text}")
        assert _outcome(lambda: tokenize_liquid_lines(text, parent)) == _outcome(
            lambda: library_lines(text, token=parent)
        ), text
    for text in _generated(_EXPRESSION_PIECES, 4000, 12):
        parent = Token(TOKEN_EXPRESSION, text, start_index=3, source=f"xx {text}")
        assert _outcome(lambda: tokenize_expression(text, parent)) == _outcome(
            lambda: library_tokenize_expression(text, parent)
        ), text


def test_the_rewrites_give_what_the_old_patterns_gave():
    scope = {"a": "A", "b c": "BC", "": "E"}
    for text in _generated(_TEMPLATE_PIECES, 3000, 14):
        old = _OLD_OUTPUT_TAG.sub(_old_rewrite_output, text)
        assert rendering.preprocess(text) == old, text
        old = _OLD_PLAIN_VARIABLE.sub(lambda m: str(scope.get(m.group(1).strip(), "")), text)
        assert rendering._plain_substitution(text, scope, html=False) == old, text
    for html in _generated(_HTML_PIECES, 3000, 20):
        assert tracking.with_tracking(html, email_id="e") == _old_with_tracking(html), html
        assert html_to_text(html) == _old_html_to_text(html), html
