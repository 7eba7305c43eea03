"""The one template renderer of the service: every path that sends (the send API, campaigns, workflows, test
emails) renders subjects and bodies here.

The language is Liquid (python-liquid) in a sandbox: no loader, so no `include`/`render`, and limits on loops and
output. Values rendered into an HTML body are HTML-escaped (`| raw` opts out); subjects and text parts are not.
Two legacy forms keep working: `{{ name ?? "friend" }}` (= `name | default: "friend"`) and keys with spaces
(`{{ first name }}`). Compiled templates are cached by the hash of their source, so sending one template to 10,000
recipients parses it once.

Rendering is bounded (a template cannot build strings past 1 MB, loop past 10,000 iterations or write past 4 MB):
a template past a limit is refused when it is saved (a dry run with no data) and, since data can push one past a
limit too, when a send renders it; a limit is never answered with the lenient fallback, which would send the
template's source.
"""

import re
from collections import OrderedDict
from dataclasses import dataclass
from io import StringIO
from threading import Lock
from typing import Any

from liquid import BoundTemplate, Environment
from liquid.exceptions import (
    ContextDepthError,
    LiquidError,
    LocalNamespaceLimitError,
    LoopIterationLimitError,
    OutputStreamLimitError,
    ResourceLimitError,
)
from liquid.output import LimitedStringIO
from markupsafe import Markup

from core.errors import ValidationFailed
from messaging.content.lexing import LinearEnvironment

MAX_STRING_BYTES = 1024 * 1024
MAX_LOOP_ITERATIONS = 10_000
# Above the 2 MB body cap, so that a body at the cap with some data still renders.
MAX_OUTPUT_BYTES = 4 * 1024 * 1024


class _CountedOutput(LimitedStringIO):
    """The output limit's buffer, counting ASCII text by its length: python-liquid's encodes every write to count
    its bytes, a tenth of a typical render. Text with other characters is still counted in UTF-8 bytes."""

    def write(self, text: str) -> int:
        if text:
            self.size += len(text) if text.isascii() else len(text.encode("utf-8"))
            if self.size > self.limit:
                raise OutputStreamLimitError("output stream limit reached", token=None)
        return StringIO.write(self, text)


class _Template(BoundTemplate):
    def _get_buffer(self) -> StringIO:
        return _CountedOutput(limit=self.env.output_stream_limit)


class _Sandbox(LinearEnvironment):
    template_class = _Template
    token_limit = 50_000
    loop_iteration_limit = MAX_LOOP_ITERATIONS
    # python-liquid scores the assigned and captured values with `sys.getsizeof`: a str is its length plus ~50.
    local_namespace_limit = MAX_STRING_BYTES
    output_stream_limit = MAX_OUTPUT_BYTES
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


class _CompiledCache:
    """The compiled templates most recently used, at most `size` of them, keyed by the source's hash and length: a
    key never holds a copy of a source that may be 2 MB, and templates too large to be worth keeping are not kept.

    The hash is Python's own string hash (SipHash with a key random per process, so no sender can aim for a
    collision), which a string computes once and keeps: a digest computed on every render cost a fifth of the
    renderer's speed."""

    size = 512
    largest_source = 256 * 1024

    def __init__(self):
        self._entries: OrderedDict[tuple[int, int, bool], Any] = OrderedDict()
        self._lock = Lock()
        self.misses = 0

    def get(self, source: str, html: bool):
        key = (hash(source), len(source), html)
        with self._lock:
            template = self._entries.get(key)
            if template is not None:
                self._entries.move_to_end(key)
                return template
        template = (_HTML if html else _TEXT).from_string(preprocess(source))
        with self._lock:
            self.misses += 1
            if len(source) <= self.largest_source:
                self._entries[key] = template
                if len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return template

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.misses = 0


_compiled = _CompiledCache()

_POSITION = re.compile(r" (\d+):(\d+)$", re.M)


def _line_and_column(source: str, index: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, index) + 1
    return source.count("\n", 0, index) + 1, index - line_start + 1


def _error_position(exc: LiquidError, source: str) -> tuple[int, int]:
    """Where in `source` the error is. python-liquid places most errors itself; one found at the end of the input
    (a block never closed) or at the end of an output statement comes without a place, so it is looked for."""
    position = _POSITION.search(str(exc))
    if position:
        return int(position.group(1)), int(position.group(2))
    index = getattr(getattr(exc, "token", None), "start_index", -1)
    if index < 0 and not exc.message.startswith("expected tag end"):
        index = next((tag.start() for tag in _OUTPUT_TAG.finditer(source) if _fails_alone(tag.group())), -1)
    return _line_and_column(source, index if index >= 0 else len(source))


_OUTPUT_TAG = re.compile(r"\{\{[^{}]*+\}\}")


def _fails_alone(tag: str) -> bool:
    try:
        _TEXT.from_string(preprocess(tag))
    except LiquidError:
        return True
    return False


def _limit_message(exc: ResourceLimitError) -> str:
    if isinstance(exc, LoopIterationLimitError):
        return f"loops past {MAX_LOOP_ITERATIONS:,} iterations"
    if isinstance(exc, LocalNamespaceLimitError):
        return f"builds strings past {MAX_STRING_BYTES // (1024 * 1024)} MB"
    if isinstance(exc, OutputStreamLimitError):
        return f"renders past {MAX_OUTPUT_BYTES // (1024 * 1024)} MB"
    if isinstance(exc, ContextDepthError):
        return "nests too deeply"
    return "exceeds a rendering limit"


def _past_limit(field: str, exc: ResourceLimitError) -> ValidationFailed:
    return ValidationFailed.field(field, f"Template {_limit_message(exc)}", "too_big")


def check_syntax(*, field: str, source: str, html: bool) -> None:
    """Raise 422 at `field` when `source` is not a valid template, with the line and column, or when it passes a
    rendering limit with no data (a loop over a literal range, a string doubled in a loop): used when saving one."""
    try:
        template = _compiled.get(source, html)
    except LiquidError as exc:
        line, column = _error_position(exc, source)
        message = f"Template syntax error: {exc.message} at line {line}, column {column}"
        raise ValidationFailed.field(field, message, "custom") from None
    try:
        template.render()
    except ResourceLimitError as exc:
        raise _past_limit(field, exc) from None
    except LiquidError:
        pass  # Errors that depend on data (a filter given nothing) are the send's concern, not the author's.


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
    """Render `source` with `scope`. With `lenient`, content that does not parse or render falls back to plain
    substitution instead of failing (inline `/v1/send` content must never fail a send); a rendering limit always
    raises `ResourceLimitError`."""
    try:
        template = _compiled.get(source, html)
    except LiquidError:
        if not lenient:
            raise
        return _plain_substitution(source, scope, html)
    try:
        return template.render(**scope)
    except ResourceLimitError:
        raise
    except LiquidError:
        if not lenient:
            raise
        return _plain_substitution(source, scope, html)


@dataclass(frozen=True)
class RenderedContent:
    subject: str
    html: str
    text: str | None = None


def _render_field(field: str, source: str, scope: dict[str, Any], *, html: bool, lenient: bool) -> str:
    try:
        return render(source, scope, html=html, lenient=lenient)
    except ResourceLimitError as exc:
        raise _past_limit(field, exc) from None


def render_email(
    *, subject: str, body: str, scope: dict[str, Any], lenient: bool, text: str | None = None
) -> RenderedContent:
    """Subject, body and (when the sender wrote one) text part of one recipient; 422 at `subject`, `body` or `text`
    when one passes a rendering limit. The text part is not escaped: it is not HTML."""
    return RenderedContent(
        # A subject is one header line: data rendered into it may not break it (the MIME writer would refuse it).
        subject=_render_field("subject", subject, scope, html=False, lenient=lenient)
        .replace("\r", " ")
        .replace("\n", " ")
        .replace("\0", ""),
        html=_render_field("body", body, scope, html=True, lenient=lenient),
        text=None if text is None else _render_field("text", text, scope, html=False, lenient=lenient),
    )


def template_scope(
    *, contact_id: str, email: str, subscribed: bool, data: dict[str, Any], links: dict[str, str]
) -> dict[str, Any]:
    """Variables of one recipient: contact data and per-request data at top level and under `data`, plus the
    contact's own fields and the system links (which no data key may shadow)."""
    scope = dict(data)
    scope.update(data=data, id=contact_id, email=email, subscribed=subscribed, **links)
    return scope
