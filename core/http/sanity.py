"""Input refused whatever the endpoint, before anything reads it:

- NUL characters (U+0000): PostgreSQL stores them in neither text nor JSON and cannot compare against them, so a
  search for one, or a contact data value holding one, ended in a 500. A URL's are refused by
  `NulCharacterMiddleware` (400), a JSON body's at the field (422).
- Lone surrogates (`\\ud800` without its pair): not text in any encoding; psycopg cannot send them (DRF's string
  fields refused them already, the free-form ones such as `data` and `headers` did not).
- JSON nested deeper than `MAX_DEPTH` levels: the recursive code behind the parser (DRF's fields, `json.dumps`,
  copies of the data) ran out of stack at a few hundred levels, another 500. No payload of the API nests beyond a
  handful of levels.
"""

import re
from typing import Any

from core.errors import ErrorCode, ValidationFailed
from core.http.exceptions import error_json_response

MAX_DEPTH = 64
# In raw JSON, what may decode to a NUL or to a surrogate (lone ones are refused; a pair is one character).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _text_fault(text: str) -> str | None:
    if "\x00" in text:
        return "Null characters are not allowed"
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            return "Surrogate characters are not allowed"
    return None


def body_fault(value: Any) -> tuple[str, str, str] | None:
    """The first field of a parsed JSON body that is refused, as (path, message, code): a string or object key
    holding a NUL character or a lone surrogate, or a value nested deeper than `MAX_DEPTH`; None when there is
    none. Iterative, so a body nested as deep as the JSON parser allows is walked without recursion."""
    pending: list[tuple[Any, str, int]] = [(value, "", 0)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, str):
            message = _text_fault(item)
            if message is not None:
                return path or "body", message, "invalid_string"
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_DEPTH:
            return path or "body", f"Nested deeper than {MAX_DEPTH} levels", "too_big"
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                child_path = f"{path}.{key}" if path else key
                message = _text_fault(key)
                if message is not None:
                    # Named as it was sent: a lone surrogate cannot be written into the answer itself.
                    return child_path.encode("utf-8", "backslashreplace").decode(), message, "invalid_string"
                pending.append((child, child_path, depth + 1))
        else:
            pending.extend(
                (child, f"{path}.{index}" if path else str(index), depth + 1)
                for index, child in reversed(list(enumerate(item)))
            )
    return None


def body_may_be_faulty(raw: bytes) -> bool:
    """False when the raw JSON of a body cannot hold what `body_fault` refuses (a cheap test for the busiest
    routes): no escaped NUL or surrogate, and fewer brackets than `MAX_DEPTH`."""
    return _SUSPECT_ESCAPE.search(raw) is not None or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH


def reject_faulty_body(value: Any) -> None:
    """422 at the first refused field of a parsed JSON body (`body_fault`)."""
    fault = body_fault(value)
    if fault is not None:
        path, message, code = fault
        raise ValidationFailed.field(path, message, code)


class NulCharacterMiddleware:
    """400 for a NUL character (`%00`) in the path or in a query parameter's name or value."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return error_json_response(400, ErrorCode.BAD_REQUEST, "The path contains a null character")
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                message = f'Query parameter "{name.replace(chr(0), "")}" contains a null character'
                return error_json_response(400, ErrorCode.BAD_REQUEST, message)
        return self.get_response(request)
