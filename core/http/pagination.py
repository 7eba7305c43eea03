"""The pagination envelopes of the API (docs/api/README.md, "Pagination").

Cursor lists are keyset-paginated on (sort field, primary key), so page 10,000 costs what page 1 costs; the
cursor is signed, and a cursor that was altered, or that belongs to another sort order, is a 400. Page-based
lists (campaigns, templates, segment members) use LIMIT/OFFSET with a page number, with their own key order.
The pages are records (`core.pages`); each endpoint writes its page with its own envelope serializer, a
`CursorPageSerializer` or `NumberedPageSerializer` whose `data` is its rows' output serializer, which is also the
page's schema.
"""

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.db.models import Q, QuerySet
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from core.errors import BadRequest, ValidationFailed
from core.http.serializers import OutputSerializer
from core.ids import uuid_or_none
from core.pages import CursorPage, Page

_cursor_signer = signing.Signer(salt="herald.api.cursor")


def int_param(params, name: str, *, default: int, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer query parameter: non-integers and values below the minimum are 422, above the maximum clamped."""
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValidationFailed.field(name, f"{name} must be an integer", "invalid_type", received="string") from None
    if value < minimum:
        raise ValidationFailed.field(name, f"{name} must be at least {minimum}", "too_small")
    return min(value, maximum) if maximum is not None else value


def uuid_param(params, name: str) -> uuid.UUID | None:
    """A UUID query parameter: absent or empty is None, anything else that is not a UUID is 422."""
    raw = params.get(name) or None
    if raw is None:
        return None
    value = uuid_or_none(raw)
    if value is None:
        raise ValidationFailed.field(name, "Invalid uuid", "invalid_string")
    return value


def choice_param(params, name: str, choices: Iterable[str], default: str) -> str:
    """An enum query parameter whose unrecognised values fall back to the default (docs/api/README.md, "Errors")."""
    value = params.get(name)
    return value if value in choices else default


def ordering(params, fields: dict[str, str], default: str) -> tuple[str, str]:
    """`order_by` arguments for the `sort` (API name -> model field) and `dir` (default desc) query parameters of a
    page-numbered list, unknown values falling back to the defaults; the id breaks ties, so pages never overlap."""
    field = fields[choice_param(params, "sort", fields, default)]
    prefix = "" if choice_param(params, "dir", ("asc", "desc"), "desc") == "asc" else "-"
    return f"{prefix}{field}", f"{prefix}id"


@dataclass(frozen=True)
class CursorSort:
    """A sort the client may ask for: API name -> model field."""

    fields: dict[str, str]
    default: str
    default_dir: str = "desc"


def _encode(sort: str, direction: str, value: Any, pk: Any) -> str:
    raw = value.isoformat() if hasattr(value, "isoformat") else value
    return _cursor_signer.sign_object([sort, direction, raw, str(pk)])


def _decode(cursor: str, sort: str, direction: str) -> tuple[Any, str]:
    try:
        cursor_sort, cursor_dir, value, pk = _cursor_signer.unsign_object(cursor)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadRequest("Invalid cursor", details={"parameter": "cursor"}) from None
    if (cursor_sort, cursor_dir) != (sort, direction):
        raise BadRequest("The cursor belongs to another sort order", details={"parameter": "cursor"})
    return value, pk


def cursor_page(queryset: QuerySet, params, *, sort: CursorSort, count: Callable[[], int] | None = None) -> CursorPage:
    """The page of `queryset` that `params` ask for (`limit`, `cursor`, `sort`, `dir`); `total` only on the first
    page (0 after), as docs/api/README.md promises."""
    limit = int_param(params, "limit", default=20, maximum=100)
    sort_name = choice_param(params, "sort", sort.fields, sort.default)
    direction = choice_param(params, "dir", ("asc", "desc"), sort.default_dir)
    field = sort.fields[sort_name]
    cursor = params.get("cursor") or None
    page = queryset
    if cursor:
        raw_value, raw_pk = _decode(cursor, sort_name, direction)
        model_field = queryset.model._meta.get_field(field)
        try:
            value = model_field.to_python(raw_value)
            pk = queryset.model._meta.pk.to_python(raw_pk)
        except Exception:
            raise BadRequest("Invalid cursor", details={"parameter": "cursor"}) from None
        op = "lt" if direction == "desc" else "gt"
        page = page.filter(Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"pk__{op}": pk}))
    prefix = "-" if direction == "desc" else ""
    rows = list(page.order_by(f"{prefix}{field}", f"{prefix}pk")[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = _encode(sort_name, direction, getattr(rows[-1], field), rows[-1].pk) if has_more else None
    total = (count() if count else queryset.count()) if not cursor else 0
    return CursorPage(rows, next_cursor, has_more, total)


def offset_page(queryset: QuerySet, params, *, max_page_size: int = 100) -> Page:
    if not queryset.ordered:
        raise TypeError("offset_page needs an ordered queryset")
    page = int_param(params, "page", default=1)
    page_size = int_param(params, "pageSize", default=20, maximum=max_page_size)
    total = queryset.count()
    start = (page - 1) * page_size
    rows = list(queryset[start : start + page_size]) if start < total else []
    return Page(rows=rows, page=page, page_size=page_size, total=total)


# The envelopes. `data` is declared on the base so that it comes first; each page declares it again with its rows'
# output serializer, `many=True, source="rows"`. (`many=False`: the schema of a list action is the envelope itself,
# not a list of envelopes.)


@extend_schema_serializer(many=False)
class CursorPageSerializer(OutputSerializer):  # of a core.pages.CursorPage
    data = serializers.ListField(source="rows")
    cursor = serializers.CharField(allow_null=True)
    hasMore = serializers.BooleanField(source="has_more")
    total = serializers.IntegerField()


@extend_schema_serializer(many=False)
class NumberedPageSerializer(OutputSerializer):  # of a core.pages.Page: the envelope of page-numbered lists
    data = serializers.ListField(source="rows")
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    pageSize = serializers.IntegerField(source="page_size")
    totalPages = serializers.IntegerField(source="total_pages")
