"""The condition language: logic, operators, units, fields and the value rules shared by validation, the SQL
compiler and the Python evaluator (docs/segments.md)."""

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

LOGICS = ("AND", "OR")
UNITS = {"days": timedelta(days=1), "hours": timedelta(hours=1), "minutes": timedelta(minutes=1)}
MAX_DEPTH = 10

EQUALITY = ("equals", "notEquals")
TEXT = ("contains", "notContains")
COMPARISON = ("greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual")
PRESENCE = ("exists", "notExists")
AGE = ("within", "olderThan")
TRIGGER = ("triggered", "triggeredWithin", "triggeredOlderThan", "notTriggered", "notTriggeredWithin")
MEMBERSHIP = ("memberOfSegment", "notMemberOfSegment")
OPERATORS = (*EQUALITY, *TEXT, *COMPARISON, *PRESENCE, *AGE, *TRIGGER, *MEMBERSHIP)

# Operators that need no value, and those that need a value and a unit.
NO_VALUE = (*PRESENCE, "triggered", "notTriggered", *MEMBERSHIP)
WITH_UNIT = (*AGE, "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin")

# Operators each kind of field accepts.
FIELD_OPERATORS = {
    "email": (*EQUALITY, *TEXT),
    "subscribed": EQUALITY,
    "date": (*EQUALITY, *COMPARISON, *AGE),
    "data": (*EQUALITY, *TEXT, *COMPARISON, *PRESENCE, *AGE),
    "event": TRIGGER,
    "activity": TRIGGER,
    "segment": MEMBERSHIP,
}
# email.<activity> -> the messaging.Email timestamp column that records it.
ACTIVITIES = {name: f"{name}_at" for name in ("sent", "delivered", "opened", "clicked", "bounced", "complained")}
DATE_FIELDS = {"createdAt": "created_at", "updatedAt": "updated_at"}

# A number written as a string ("42", "-3.5") compares like the number. The same pattern runs in
# Python, SQLite (REGEXP, Python's re) and PostgreSQL (~), so it stays within what all three read alike.
NUMERIC_PATTERN = r"-?[0-9]+(\.[0-9]+)?"
DATE_ONLY = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])")
DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)


# A date or datetime string in contact data that the three engines (Python, SQLite, PostgreSQL) read the same way:
# ranges checked here, day-of-month checked by each engine (2026-02-30 is not a date), at most millisecond
# precision (SQLite keeps no more), no offset meaning UTC.
INSTANT_PATTERN = (
    r"[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"([T ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,3})?)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?"
)


def as_instant(value) -> datetime | None:
    """The UTC instant a data value spells (a string matching INSTANT_PATTERN that is a real date), else None."""
    if not isinstance(value, str) or not re.fullmatch(INSTANT_PATTERN, value):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class Field:
    kind: str  # email, subscribed, date, data, event, activity
    column: str | None = None  # model column of email, subscribed and date fields; Email column of activities
    path: tuple[str, ...] = ()  # data.<path>
    name: str = ""  # event.<name>, segment.<id>


def parse_field(field: str) -> Field | None:
    if field in ("email", "subscribed"):
        return Field(field, column=field)
    if field in DATE_FIELDS:
        return Field("date", column=DATE_FIELDS[field])
    if field.startswith("data."):
        path = tuple(field[len("data.") :].split("."))
        # SQLite's JSON paths cannot address a key with a double quote or a backslash: refused in every engine.
        if all(path) and not any('"' in key or "\\" in key for key in path):
            return Field("data", path=path)
        return None
    if field.startswith("email."):
        column = ACTIVITIES.get(field[len("email.") :])
        return Field("activity", column=column) if column else None
    if field.startswith("segment.") and len(field) > len("segment."):
        return Field("segment", name=field[len("segment.") :])
    if field.startswith("event.") and len(field) > len("event."):
        return Field("event", name=field[len("event.") :])
    return None


def as_number(value) -> float | None:
    """The numeric reading of a JSON value: numbers, and strings that spell a number; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(NUMERIC_PATTERN, value):
        return float(value)
    return None


def parse_instant(value: str) -> tuple[datetime, datetime | None]:
    """A date filter value: (start, end of the UTC day) for `YYYY-MM-DD`, (instant, None) for a datetime."""
    if DATE_ONLY.fullmatch(value):
        start = datetime.fromisoformat(value).replace(tzinfo=UTC)
        return start, start + timedelta(days=1)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment, None


def age_threshold(filter_: dict, now: datetime) -> datetime:
    return now - filter_["value"] * UNITS[filter_["unit"]]


def condition_fields(condition) -> list[str]:
    """The `field` of every filter of a (possibly unvalidated) tree, in order."""
    found = []

    def walk(node):
        if not isinstance(node, dict) or not isinstance(node.get("groups"), list):
            return
        for group in node["groups"]:
            if not isinstance(group, dict):
                continue
            for filter_ in group.get("filters") if isinstance(group.get("filters"), list) else []:
                if isinstance(filter_, dict) and isinstance(filter_.get("field"), str):
                    found.append(filter_["field"])
            walk(group.get("conditions"))

    walk(condition)
    return found


def field_covers(used: str, field: str) -> bool:
    """Whether a filter on `used` reads the contact field `field`: `data.plan` covers `data.plan.tier`."""
    return used == field or used.startswith(field + ".")


def segment_references(condition) -> list[tuple[str, str]]:
    """(path of the filter's field, referenced segment id) of every `segment.<id>` filter of a tree, which may be
    unvalidated: malformed nodes are skipped."""
    found = []

    def walk(node, path):
        if not isinstance(node, dict) or not isinstance(node.get("groups"), list):
            return
        for g_index, group in enumerate(node["groups"]):
            if not isinstance(group, dict):
                continue
            filters = group.get("filters") if isinstance(group.get("filters"), list) else []
            for f_index, filter_ in enumerate(filters):
                name = filter_.get("field") if isinstance(filter_, dict) else None
                if isinstance(name, str) and name.startswith("segment.") and len(name) > len("segment."):
                    found.append((f"{path}.groups.{g_index}.filters.{f_index}.field", name[len("segment.") :]))
            walk(group.get("conditions"), f"{path}.groups.{g_index}.conditions")

    walk(condition, "condition")
    return found


def condition_text(condition) -> str:
    """A readable one-line rendering for people (admin): `(data.plan equals "pro" AND event.buy triggered)`."""
    if not isinstance(condition, dict):
        return ""
    logic = f" {condition.get('logic')} "
    groups = []
    for group in condition.get("groups") or []:
        parts = []
        for filter_ in group.get("filters") or []:
            words = [str(filter_.get("field")), str(filter_.get("operator"))]
            if "value" in filter_:
                words.append(json.dumps(filter_["value"], ensure_ascii=False))
            if filter_.get("unit"):
                words.append(str(filter_["unit"]))
            parts.append(" ".join(words))
        if group.get("conditions"):
            parts.append(condition_text(group["conditions"]))
        groups.append("(" + " AND ".join(parts) + ")" if len(parts) > 1 else "".join(parts))
    return "(" + logic.join(groups) + ")" if len(groups) > 1 else "".join(groups)
