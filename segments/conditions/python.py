"""Evaluation of a validated condition for one contact in Python (workflows, incremental membership). It follows
the SQL compiler rule for rule; tests/test_conditions_property.py checks that both agree."""

from collections.abc import Iterable
from datetime import datetime

from django.apps import apps

from segments.conditions.spec import (
    ACTIVITIES,
    DATE_ONLY,
    age_threshold,
    as_instant,
    as_number,
    parse_field,
    parse_instant,
)
from segments.models import Segment, SegmentMembership, SegmentType

_MISSING = object()
_COMPARE = {
    "greaterThan": lambda a, b: a > b,
    "lessThan": lambda a, b: a < b,
    "greaterThanOrEqual": lambda a, b: a >= b,
    "lessThanOrEqual": lambda a, b: a <= b,
}


def condition_matches(
    condition: dict, *, contact, now: datetime, events: Iterable | None = None, emails: Iterable | None = None
) -> bool:
    """Whether `contact` satisfies `condition`.

    `events` are the contact's events as (name, created_at) pairs and `emails` its emails as dicts of the activity
    columns (`sent_at`, ...); when None each is read from the database once, and only if a filter needs it."""
    cache = {"events": None if events is None else list(events), "emails": None if emails is None else list(emails)}
    return _condition(condition, contact, now, cache)


def _condition(condition: dict, contact, now: datetime, cache: dict) -> bool:
    results = (_group(group, contact, now, cache) for group in condition["groups"])
    return any(results) if condition["logic"] == "OR" else all(results)


def _group(group: dict, contact, now: datetime, cache: dict) -> bool:
    if not all(_filter(f, contact, now, cache) for f in group.get("filters") or []):
        return False
    nested = group.get("conditions")
    return nested is None or _condition(nested, contact, now, cache)


def _filter(filter_: dict, contact, now: datetime, cache: dict) -> bool:
    field = parse_field(filter_["field"])
    operator, value = filter_["operator"], filter_.get("value")
    if field.kind == "email":
        email, wanted = contact.email.lower(), value.lower()
        hit = email == wanted if operator in ("equals", "notEquals") else wanted in email
        return not hit if operator.startswith("not") else hit
    if field.kind == "subscribed":
        return contact.subscribed == (value if operator == "equals" else not value)
    if field.kind == "date":
        return _date(getattr(contact, field.column), operator, filter_, now)
    if field.kind == "data":
        if operator in ("within", "olderThan"):
            moment = as_instant(_lookup(contact.data, field.path))
            return moment is not None and _date(moment, operator, filter_, now)
        return _data(_lookup(contact.data, field.path), operator, value)
    if field.kind == "segment":
        hit = _member(field.name, contact, now, cache)
        return not hit if operator == "notMemberOfSegment" else hit
    if field.kind == "activity":
        times = [row[field.column] for row in _emails(contact, cache) if row[field.column] is not None]
        return _trigger(times, operator, filter_, now)
    times = [created for name, created in _events(contact, cache) if name == field.name]
    return _trigger(times, operator, filter_, now)


def _date(moment: datetime, operator: str, filter_: dict, now: datetime) -> bool:
    if operator == "within":
        return moment >= age_threshold(filter_, now)
    if operator == "olderThan":
        return moment < age_threshold(filter_, now)
    start, end = parse_instant(filter_["value"])
    if operator in ("equals", "notEquals"):
        hit = start <= moment < end if end else moment == start
        return not hit if operator == "notEquals" else hit
    if operator == "greaterThan":
        return moment >= end if end else moment > start
    if operator == "greaterThanOrEqual":
        return moment >= start
    if operator == "lessThan":
        return moment < start
    return moment < end if end else moment <= start


def _lookup(data, path: tuple[str, ...]):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _data(found, operator: str, value) -> bool:
    if operator == "exists":
        return found is not _MISSING and found is not None
    if operator == "notExists":
        return found is _MISSING or found is None
    if operator in _COMPARE:
        number = as_number(found) if found is not _MISSING else None
        return number is not None and _COMPARE[operator](number, as_number(value))
    if found is _MISSING:
        return False  # every remaining operator, negative ones included, needs the key
    hit = _equals(found, value) if operator in ("equals", "notEquals") else isinstance(found, str) and value in found
    return not hit if operator.startswith("not") else hit


def _equals(found, value) -> bool:
    if isinstance(value, bool) or isinstance(found, bool):
        return isinstance(value, bool) and isinstance(found, bool) and found == value
    if isinstance(value, int | float):
        return isinstance(found, int | float) and float(found) == float(value)
    if not isinstance(found, str):
        return False
    if DATE_ONLY.fullmatch(value):
        start, end = parse_instant(value)
        moment = as_instant(found)
        return moment is not None and start <= moment < end
    return found == value


def _events(contact, cache: dict) -> list:
    if cache["events"] is None:
        cache["events"] = list(contact.events.values_list("name", "created_at"))
    return cache["events"]


def _member(segment_id: str, contact, now: datetime, cache: dict) -> bool:
    segment = Segment.objects.filter(pk=segment_id).first()
    if segment is None or segment.project_id != contact.project_id:
        return False
    if segment.type == SegmentType.DYNAMIC:
        return bool(segment.condition) and _condition(segment.condition, contact, now, cache)
    return SegmentMembership.objects.filter(segment_id=segment.id, contact_id=contact.id, exited_at=None).exists()


def _emails(contact, cache: dict) -> list:
    if cache["emails"] is None:
        rows = apps.get_model("messaging", "Email").objects.filter(contact_id=contact.id)
        cache["emails"] = list(rows.values(*ACTIVITIES.values()))
    return cache["emails"]


def _trigger(times: list, operator: str, filter_: dict, now: datetime) -> bool:
    if operator in ("triggered", "notTriggered"):
        hit = bool(times)
    elif operator in ("triggeredWithin", "notTriggeredWithin"):
        hit = any(t >= age_threshold(filter_, now) for t in times)
    else:  # triggeredOlderThan
        hit = any(t < age_threshold(filter_, now) for t in times)
    return not hit if operator.startswith("not") else hit
