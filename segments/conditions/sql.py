"""Compilation of a validated condition tree to a `Q` over `contacts.Contact` (one project's contacts are
selected by the caller). Runs on SQLite and PostgreSQL; JSON semantics are written per vendor in `DataPredicate`
so that both databases, and the Python evaluator, give the same answers."""

import json
from datetime import UTC, datetime

from django.apps import apps
from django.db.models import BooleanField, Exists, Expression, F, OuterRef, Q, QuerySet

from contacts.models import Contact, Event
from segments.conditions.spec import (
    DATE_ONLY,
    INSTANT_PATTERN,
    NUMERIC_PATTERN,
    age_threshold,
    as_number,
    parse_field,
    parse_instant,
)
from segments.models import Segment, SegmentMembership, SegmentType

_COMPARE = {"greaterThan": ">", "lessThan": "<", "greaterThanOrEqual": ">=", "lessThanOrEqual": "<="}


def segment_contacts(segment: Segment, *, now: datetime) -> QuerySet[Contact]:
    """The contacts of a segment, unordered: those its condition selects at `now` for a dynamic segment, its open
    memberships for a static one. A condition naming a segment compiles to an EXISTS over these."""
    contacts = Contact.objects.filter(project_id=segment.project_id)
    if segment.type == SegmentType.DYNAMIC and segment.condition:
        return contacts.filter(condition_q(segment.condition, now=now))
    if segment.type == SegmentType.STATIC:
        members = SegmentMembership.objects.filter(segment_id=segment.id, exited_at=None).values("contact_id")
        return contacts.filter(pk__in=members)
    return contacts.none()


def condition_q(condition: dict, *, now: datetime) -> Q:
    """The Q of a condition validated by `condition_validate`: groups combined by `logic`, each group the AND of
    its filters and nested condition. `now` anchors within/olderThan (one clock for a whole evaluation)."""
    parts = [_group_q(group, now) for group in condition["groups"]]
    combined = parts[0]
    for part in parts[1:]:
        combined = (combined | part) if condition["logic"] == "OR" else (combined & part)
    return combined


def _group_q(group: dict, now: datetime) -> Q:
    q = Q()
    for filter_ in group.get("filters") or []:
        q &= _filter_q(filter_, now)
    if group.get("conditions") is not None:
        q &= condition_q(group["conditions"], now=now)
    return q


def _filter_q(filter_: dict, now: datetime) -> Q:
    field = parse_field(filter_["field"])
    operator, value = filter_["operator"], filter_.get("value")
    if field.kind == "email":
        lookup = "email" if operator in ("equals", "notEquals") else "email__contains"
        q = Q(**{lookup: value.lower()})
        return ~q if operator.startswith("not") else q
    if field.kind == "subscribed":
        return Q(subscribed=value if operator == "equals" else not value)
    if field.kind == "date":
        return _date_q(field.column, operator, filter_, now)
    if field.kind == "data":
        if operator in ("within", "olderThan"):
            value = age_threshold(filter_, now)
        return Q(DataPredicate(field.path, operator, value))
    if field.kind == "activity":
        return _activity_q(field.column, operator, filter_, now)
    if field.kind == "segment":
        return _segment_q(field.name, operator, now)
    return _event_q(field.name, operator, filter_, now)


def _date_q(column: str, operator: str, filter_: dict, now: datetime) -> Q:
    if operator == "within":
        return Q(**{f"{column}__gte": age_threshold(filter_, now)})
    if operator == "olderThan":
        return Q(**{f"{column}__lt": age_threshold(filter_, now)})
    start, end = parse_instant(filter_["value"])
    if operator in ("equals", "notEquals"):
        q = Q(**{f"{column}__gte": start, f"{column}__lt": end}) if end else Q(**{column: start})
        return ~q if operator == "notEquals" else q
    # A date-only value stands for its whole day: after it means from the next day on.
    bounds = {
        "greaterThan": ("gte", end) if end else ("gt", start),
        "greaterThanOrEqual": ("gte", start),
        "lessThan": ("lt", start),
        "lessThanOrEqual": ("lt", end) if end else ("lte", start),
    }
    lookup, moment = bounds[operator]
    return Q(**{f"{column}__{lookup}": moment})


def _event_q(name: str, operator: str, filter_: dict, now: datetime) -> Q:
    events = Event.objects.filter(project_id=OuterRef("project_id"), contact_id=OuterRef("pk"), name=name)
    return _trigger_q(events, "created_at", operator, filter_, now)


def _activity_q(column: str, operator: str, filter_: dict, now: datetime) -> Q:
    # By model name: the condition engine reads emails but does not depend on the messaging app's code.
    emails = apps.get_model("messaging", "Email").objects.filter(
        contact_id=OuterRef("pk"), **{f"{column}__isnull": False}
    )
    return _trigger_q(emails, column, operator, filter_, now)


def _segment_q(segment_id: str, operator: str, now: datetime) -> Q:
    """Membership as `EXISTS (members with this pk)`: never NULL, so the negation is exact, and NOT EXISTS is
    planned as an anti-join (a NOT IN over a large segment would be re-read for every contact once its list
    outgrows PostgreSQL's work_mem). References were checked for existence, project and cycles when the condition
    was saved."""
    segment = Segment.objects.filter(pk=segment_id).first()
    members = segment_contacts(segment, now=now) if segment else Contact.objects.none()
    exists = Exists(members.filter(pk=OuterRef("pk")))
    return Q(~exists) if operator == "notMemberOfSegment" else Q(exists)


def _trigger_q(rows, column: str, operator: str, filter_: dict, now: datetime) -> Q:
    """EXISTS over the contact's rows (events or emails) whose `column` is in the operator's window."""
    if operator in ("triggeredWithin", "notTriggeredWithin"):
        rows = rows.filter(**{f"{column}__gte": age_threshold(filter_, now)})
    elif operator == "triggeredOlderThan":
        rows = rows.filter(**{f"{column}__lt": age_threshold(filter_, now)})
    exists = Exists(rows)
    return Q(~exists) if operator.startswith("not") else Q(exists)


class DataPredicate(Expression):
    """A filter on `contacts_contact.data` at a nested path, rendered per vendor.

    Three readings of the value at the path are built in SQL, the same on both databases:
    - type: `string`, `number`, `true`, `false`, `null`, `array`, `object`, or SQL NULL when the path is missing;
    - text: the string value;
    - number: the value as a number when it is a number or a numeric string, else NULL.
    Operators are then written on these readings, so type-strict equality, numeric strings and missing keys behave
    identically on SQLite and PostgreSQL.
    """

    output_field = BooleanField()
    conditional = True

    def __init__(self, path: tuple[str, ...], operator: str, value, column=None):
        super().__init__()
        self.path, self.operator, self.value = path, operator, value
        self.column = column if column is not None else F("data")

    def get_source_expressions(self):
        return [self.column]

    def set_source_expressions(self, exprs):
        (self.column,) = exprs

    def as_sql(self, compiler, connection):
        column_sql, column_params = compiler.compile(self.column)
        if column_params:
            raise ValueError("DataPredicate expects a plain column")
        readings = (_SQLITE if connection.vendor == "sqlite" else _POSTGRES)(column_sql, self.path)
        sql, params = _predicate(readings, self.operator, self.value)
        return readings.for_planner(sql, self.operator, self.value), params


class _Readings:
    """SQL fragments (with their params) reading the JSON value at one path."""

    anchor = "$"

    def __init__(self, column: str, path: tuple[str, ...]):
        self.column, self.path = column, path

    def regex(self, pattern: str) -> str:
        return f"^{pattern}{self.anchor}"

    def containment(self, value) -> tuple[str, list] | None:
        """An index-friendly test of "the value at the path equals the string, number or boolean `value`" that the
        planner can estimate, or None. Exact for strings and booleans; for numbers, exact decimal equality."""
        return None

    def for_planner(self, sql: str, operator: str, value) -> str:
        """The predicate as the query planner should see it."""
        return sql


class _SQLITE(_Readings):
    anchor = r"\Z"  # Python's re: `$` would also match before a trailing newline

    def __init__(self, column, path):
        super().__init__(column, path)
        self.json_path = "$" + "".join("." + json.dumps(key) for key in path)

    def type(self):
        t = f"json_type({self.column}, %s)"
        sql = (
            f"(CASE {t} WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' ELSE {t} END)"
        )
        return sql, [self.json_path, self.json_path]

    def text(self):
        return f"json_extract({self.column}, %s)", [self.json_path]

    def number(self):
        t, v = f"json_type({self.column}, %s)", f"json_extract({self.column}, %s)"
        p = self.json_path
        sql = (
            f"(CASE WHEN {t} IN ('integer', 'real') THEN {v} "
            f"WHEN {t} = 'text' AND {v} REGEXP %s THEN CAST({v} AS REAL) END)"
        )
        return sql, [p, p, p, p, self.regex(NUMERIC_PATTERN), p]

    def matches(self, text_sql: str) -> str:
        return f"{text_sql} REGEXP %s"

    def instant(self):
        """Normalised UTC text `YYYY-MM-DD HH:MM:SS.SSS` (compares like the instant), or NULL."""
        t, v, p = f"json_type({self.column}, %s)", f"json_extract({self.column}, %s)", self.json_path
        sql = (
            f"(CASE WHEN {t} = 'text' AND {v} REGEXP %s AND date(substr({v}, 1, 10), '+0 days') = substr({v}, 1, 10) "
            f"THEN strftime('%%Y-%%m-%%d %%H:%%M:%%f', {v}) END)"
        )
        return sql, [p, p, self.regex(INSTANT_PATTERN), p, p, p]

    def instant_param(self, moment: datetime):
        return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"

    def position(self, text_sql: str) -> str:
        return f"instr({text_sql}, %s)"


class _POSTGRES(_Readings):
    def _value(self):
        return "(" + self.column + " -> %s" * len(self.path) + ")", list(self.path)

    def type(self):
        v, p = self._value()
        sql = f"(CASE WHEN jsonb_typeof({v}) = 'boolean' THEN {v} #>> '{{}}' ELSE jsonb_typeof({v}) END)"
        return sql, [*p, *p, *p]

    def text(self):
        v, p = self._value()
        return f"({v} #>> '{{}}')", p

    def number(self):
        v, p = self._value()
        # A jsonb number casts to double directly (half the cost of a round trip through its text at 1M rows).
        sql = (
            f"(CASE WHEN jsonb_typeof({v}) = 'number' THEN {v}::double precision "
            f"WHEN jsonb_typeof({v}) = 'string' AND ({v} #>> '{{}}') ~ %s THEN ({v} #>> '{{}}')::double precision END)"
        )
        return sql, [*p, *p, *p, *p, self.regex(NUMERIC_PATTERN), *p]

    def matches(self, text_sql: str) -> str:
        return f"{text_sql} ~ %s"

    def instant(self):
        v, p = self._value()
        txt = f"({v} #>> '{{}}')"
        # Nested CASEs fix the order: the casts run only on strings that passed the pattern (PostgreSQL may
        # evaluate AND operands in any order, and a failed cast is an error, not NULL).
        valid_day = (
            f"to_char((substr({txt}, 1, 7) || '-01')::date + (substr({txt}, 9, 2)::int - 1), 'YYYY-MM-DD')"
            f" = substr({txt}, 1, 10)"
        )
        sql = (
            f"(CASE WHEN jsonb_typeof({v}) = 'string' AND {txt} ~ %s THEN "
            f"CASE WHEN {valid_day} THEN {txt}::timestamptz END END)"
        )
        return sql, [*p, *p, self.regex(INSTANT_PATTERN), *p, *p, *p, *p]

    def instant_param(self, moment: datetime):
        return moment

    def containment(self, value):
        # `data @> '{"plan": "pro"}'`: a GIN index on data can serve it, and the planner estimates it from the
        # column's statistics. At a nested object path a scalar contains only an equal scalar of the same JSON
        # type (the array exception of @> applies at the top level only), so it is type-strict equality itself.
        nested = value
        for key in reversed(self.path):
            nested = {key: nested}
        return f"({self.column} @> %s::jsonb)", [json.dumps(nested)]

    def for_planner(self, sql, operator, value):
        """Equality through containment is left as it is: the planner estimates it. Any other predicate reads the
        value through CASE expressions that have no statistics; written as conditions, each comparison of those
        would be guessed at 0.5 % of the rows, and a filter of several at about one row, which makes the planner
        probe the events index once per contact. As one opaque boolean it is guessed at half the rows, an error
        towards too many that costs a hash join at worst."""
        if operator in ("equals", "notEquals") and not (isinstance(value, str) and DATE_ONLY.fullmatch(value)):
            return sql
        return f"(CASE WHEN {sql} THEN TRUE ELSE FALSE END)"

    def position(self, text_sql: str) -> str:
        return f"strpos({text_sql}, %s)"


def _predicate(r: _Readings, operator: str, value) -> tuple[str, list]:
    type_sql, type_params = r.type()
    if operator == "exists":
        return f"({type_sql} IS NOT NULL AND {type_sql} <> 'null')", [*type_params, *type_params]
    if operator == "notExists":
        return f"({type_sql} IS NULL OR {type_sql} = 'null')", [*type_params, *type_params]
    if operator in ("within", "olderThan"):
        instant_sql, instant_params = r.instant()
        comparison = ">=" if operator == "within" else "<"
        return f"({instant_sql} {comparison} %s)", [*instant_params, r.instant_param(value)]
    if operator in _COMPARE:
        number_sql, number_params = r.number()
        return f"({number_sql} {_COMPARE[operator]} %s)", [*number_params, as_number(value)]
    if operator in ("equals", "notEquals"):
        sql, params = _equals(r, value)
    else:  # contains, notContains: case-sensitive substring of a string value
        text_sql, text_params = r.text()
        sql = f"({type_sql} = 'string' AND {r.position(text_sql)} > 0)"
        params = [*type_params, *text_params, value]
    if operator.startswith("not"):
        # Present (null included) and not matching; a missing key never matches a negative operator.
        return f"({type_sql} IS NOT NULL AND NOT COALESCE({sql}, FALSE))", [*type_params, *params]
    return sql, params


def _equals(r: _Readings, value) -> tuple[str, list]:
    if isinstance(value, str) and DATE_ONLY.fullmatch(value):
        # The whole UTC day: any date or datetime string whose instant falls in it.
        start, end = parse_instant(value)
        instant_sql, instant_params = r.instant()
        sql = f"({instant_sql} >= %s AND {instant_sql} < %s)"
        return sql, [*instant_params, r.instant_param(start), *instant_params, r.instant_param(end)]
    type_sql, type_params = r.type()
    if isinstance(value, bool):
        sql, params = f"({type_sql} = %s)", [*type_params, "true" if value else "false"]
    elif isinstance(value, int | float):
        number_sql, number_params = r.number()
        sql, params = f"({type_sql} = 'number' AND {number_sql} = %s)", [*type_params, *number_params, float(value)]
    else:
        text_sql, text_params = r.text()
        sql, params = f"({type_sql} = 'string' AND {text_sql} = %s)", [*type_params, *text_params, value]
    contained = r.containment(value)
    if contained is None:
        return sql, params
    if isinstance(value, bool) or not isinstance(value, int | float):
        return contained
    # jsonb compares numbers as exact decimals, SQLite and Python as doubles (0.30000000000000001 equals 0.3), so
    # the double reading is ORed in: the result is the double comparison, and the planner's estimate that of @>.
    return f"({contained[0]} OR {sql})", [*contained[1], *params]


__all__ = ["DataPredicate", "condition_q"]
