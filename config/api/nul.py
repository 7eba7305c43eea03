"""NUL characters (U+0000), refused wherever a request can carry one: PostgreSQL stores them in neither text nor
JSON and cannot compare against them, so a search for one, or a contact data value holding one, ended in a 500.
A URL's are refused by `NulCharacterMiddleware` (400), a JSON body's by the API's parser (422 at the field)."""

from typing import Any

from config.api.exceptions import ErrorCode, ValidationFailed, error_json_response


def nul_character_path(value: Any) -> str | None:
    """The path (`to.0.name`, `data.note`) of the first string or object key in a parsed JSON body that holds a NUL
    character, which PostgreSQL stores in neither text nor JSON; None when there is none. Iterative: a body may
    nest as deep as the JSON parser allows."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                child_path = f"{path}.{key}" if path else str(key)
                if "\x00" in key:
                    return child_path
                pending.append((child, child_path))
        elif isinstance(item, list):
            pending.extend((child, f"{path}.{index}") for index, child in reversed(list(enumerate(item))))
    return None


def reject_nul_characters(value: Any) -> None:
    """422 at the first field of a parsed JSON body that holds a NUL character (`nul_character_path`)."""
    path = nul_character_path(value)
    if path is not None:
        raise ValidationFailed.field(path or "body", "Null characters are not allowed", "invalid_string")


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
