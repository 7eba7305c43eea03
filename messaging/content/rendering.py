"""The one template renderer of the service: every path that sends (the send API, campaigns, workflows, test
emails) renders subjects and bodies here.

The language is Liquid (python-liquid) in a sandbox: no loader, so no `include`/`render`, and limits on loops and
output. Values rendered into an HTML body are HTML-escaped (`| raw` opts out); subjects and text parts are not.
Two legacy forms keep working: `{{ name ?? "friend" }}` (= `name | default: "friend"`) and keys with spaces
(`{{ first name }}`). Compiled templates are cached by source, so sending one template to 10,000 recipients
parses it once.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from liquid import Environment
from liquid.exceptions import LiquidError
from markupsafe import Markup

from core.errors import ValidationFailed
from messaging.content.lexing import LinearEnvironment


class _Sandbox(LinearEnvironment):
    token_limit = 50_000
    loop_iteration_limit = 10_000
    output_stream_limit = 5 * 1024 * 1024
    context_depth_limit = 30


def _environment(*, autoescape: bool) -> Environment:
    env = _Sandbox(autoescape=autoescape)
    for tag in ("include", "render"):
        env.tags.pop(tag, None)
    env.filters["raw"] = Markup if autoescape else str
    return env


_HTML = _environment(autoescape=True)
_TEXT = _environment(autoescape=False)

_LEGACY_DEFAULT = re.compile(r"^(?P<head>.*?)\?\?(?P<fallback>.*)$", re.S)
_SPACED_NAME = re.compile(r"^\s*([A-Za-z_][\w-]*(?: +[\w-]+)+)\s*$")


def _rewrite_output(open_trim: str, inner: str, close_trim: str) -> str | None:
    """The output tag in plain Liquid, or None when it has no legacy form (most tags: looked for cheaply first)."""
    legacy = "??" in inner and _LEGACY_DEFAULT.match(inner)
    if legacy and "|" not in legacy["head"]:
        inner = f"{legacy['head'].rstrip()} | default: {legacy['fallback'].strip()} "
    elif " " not in inner.partition("|")[0].strip():
        return None
    head, bar, rest = inner.partition("|")
    spaced = _SPACED_NAME.match(head)
    if spaced:
        head = f' ["{spaced.group(1)}"] '
    return "{{" + open_trim + head + bar + rest + close_trim + "}}"


def preprocess(source: str) -> str:
    """Rewrite the legacy forms into plain Liquid before parsing, in every `{{ ... }}` (from a `{{` to the first `}}`
    after it, either side's `-` kept apart).

    One pass with `str.find`: the regular expression this replaces rescanned the rest of the source for every `{{`
    that no `}}` followed (80 KB of `{{`: two minutes); here, once no `}}` follows, nothing after can be a tag.
    """
    parts, copied, position = [], 0, 0
    while (start := source.find("{{", position)) >= 0:
        end = source.find("}}", start + 2)
        if end < 0:
            break
        position = end + 2
        inner_start = start + 3 if source.startswith("-", start + 2) else start + 2
        inner_end = end - 1 if end - 1 >= inner_start and source[end - 1] == "-" else end
        rewritten = _rewrite_output(
            source[start + 2 : inner_start], source[inner_start:inner_end], source[inner_end:end]
        )
        if rewritten is not None:
            parts += [source[copied:start], rewritten]
            copied = position
    parts.append(source[copied:])
    return "".join(parts)


@lru_cache(maxsize=1024)
def _compile(source: str, html: bool):
    return (_HTML if html else _TEXT).from_string(preprocess(source))


_POSITION = re.compile(r" (\d+):(\d+)$", re.M)


def _error_message(exc: LiquidError) -> str:
    text = str(exc)
    position = _POSITION.search(text)
    where = f" at line {position.group(1)}, column {position.group(2)}" if position else ""
    return f"{text.splitlines()[0]}{where}"


def check_syntax(*, field: str, source: str, html: bool) -> None:
    """Raise 422 with the line and column when `source` is not a valid template (used when saving one)."""
    try:
        _compile(source, html)
    except LiquidError as exc:
        raise ValidationFailed.field(field, f"Template syntax error: {_error_message(exc)}", "custom") from None


# `{{`, characters other than braces, `|` and `?`, `}}`: possessive, and a run stops at the next brace, so each
# character is read once (a lazy group between two `\s*` was cubic in a run of spaces).
_PLAIN_VARIABLE = re.compile(r"\{\{([^{}|?]++)\}\}")


def _plain_substitution(source: str, scope: dict, html: bool) -> str:
    """The fallback for inline content that does not parse: `{{ var }}` replaced, nothing else interpreted."""

    def value(match: re.Match) -> str:
        found = scope.get(match.group(1).strip(), "")
        text = "" if found is None else str(found)
        return str(Markup.escape(text)) if html else text

    return _PLAIN_VARIABLE.sub(value, source)


def render(source: str, scope: dict[str, Any], *, html: bool, lenient: bool = False) -> str:
    """Render `source` with `scope`. With `lenient`, content that does not parse falls back to plain
    substitution instead of failing (inline `/v1/send` content must never fail a send)."""
    try:
        template = _compile(source, html)
    except LiquidError:
        if not lenient:
            raise
        return _plain_substitution(source, scope, html)
    try:
        return template.render(**scope)
    except LiquidError:
        if not lenient:
            raise
        return _plain_substitution(source, scope, html)


@dataclass(frozen=True)
class RenderedContent:
    subject: str
    html: str


def render_email(*, subject: str, body: str, scope: dict[str, Any], lenient: bool) -> RenderedContent:
    return RenderedContent(
        # A subject is one header line: data rendered into it may not break it (the MIME writer would refuse it).
        subject=render(subject, scope, html=False, lenient=lenient)
        .replace("\r", " ")
        .replace("\n", " ")
        .replace("\0", ""),
        html=render(body, scope, html=True, lenient=lenient),
    )


def template_scope(
    *, contact_id: str, email: str, subscribed: bool, data: dict[str, Any], links: dict[str, str]
) -> dict[str, Any]:
    """Variables of one recipient: contact data and per-request data at top level and under `data`, plus the
    contact's own fields and the system links (which no data key may shadow)."""
    scope = dict(data)
    scope.update(data=data, id=contact_id, email=email, subscribed=subscribed, **links)
    return scope
