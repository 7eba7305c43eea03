"""Validation of a condition tree: every error names the dotted path of the bad node and says what is allowed."""

from typing import Any

from django.apps import apps

from core.errors import ValidationFailed
from core.json import json_type
from segments.conditions.spec import (
    COMPARISON,
    DATE_ONLY,
    DATETIME,
    FIELD_OPERATORS,
    LOGICS,
    MAX_DEPTH,
    NO_VALUE,
    OPERATORS,
    TEXT,
    UNITS,
    WITH_UNIT,
    as_number,
    parse_field,
    parse_instant,
    segment_references,
)

FIELD_FORMS = (
    "email, subscribed, createdAt, updatedAt, data.<path>, event.<name> or "
    "email.<sent|delivered|opened|clicked|bounced|complained> or segment.<segmentId>"
)


class _Errors:
    def __init__(self):
        self.items: list[dict] = []

    def add(self, path: str, message: str, code: str = "custom", received: Any = None) -> None:
        entry = {"field": path, "message": message, "code": code}
        if received is not None:
            entry["received"] = received
        self.items.append(entry)


def condition_validate(condition: Any, *, path: str = "condition", project=None, segment_id=None) -> None:
    """Raise 422 VALIDATION_ERROR listing every problem of `condition`, each at its dotted path.

    `segment.<id>` filters must name a segment of `project`; when the condition belongs to segment `segment_id`,
    following references from it must never lead back to that segment."""
    errors = _Errors()
    _condition(condition, path, 1, errors)
    if not errors.items:
        _segment_references(condition, path, project, segment_id, errors)
    if errors.items:
        raise ValidationFailed(errors.items)


def _segment_references(condition: dict, path: str, project, segment_id, errors: _Errors) -> None:
    """1. Load the project's segments once (a project has tens of them, not thousands).
    2. Each referenced id must be one of them.
    3. Depth-first from each reference through the stored conditions; reaching `segment_id` is a cycle."""
    references = [(p.replace("condition", path, 1), ref) for p, ref in segment_references(condition)]
    if not references:
        return
    graph = {}
    if project is not None:
        Segment = apps.get_model("segments", "Segment")
        for seg_id, seg_condition in Segment.objects.filter(project=project).values_list("id", "condition"):
            graph[str(seg_id)] = [ref for _path, ref in segment_references(seg_condition)]
    for field_path, ref in references:
        if ref not in graph:
            errors.add(field_path, f'Unknown segment "{ref}": expected the id of a segment of this project')
            continue
        if segment_id is None:
            continue
        cycle = _path_to(graph, ref, str(segment_id), [str(segment_id), ref])
        if cycle:
            errors.add(field_path, "Segment references may not form a cycle: " + " -> ".join(cycle))


def _path_to(graph: dict, start: str, target: str, trail: list[str]) -> list[str] | None:
    if start == target:
        return trail
    for nxt in graph.get(start, []):
        if nxt in trail[1:]:
            continue  # stored graph is acyclic; guard anyway
        found = _path_to(graph, nxt, target, [*trail, nxt])
        if found:
            return found
    return None


def _condition(node: Any, path: str, depth: int, errors: _Errors) -> None:
    if not isinstance(node, dict):
        errors.add(path, "Expected an object {logic, groups}", "invalid_type", json_type(node))
        return
    if depth > MAX_DEPTH:
        errors.add(path, f"Conditions may be nested at most {MAX_DEPTH} deep", "too_big")
        return
    logic = node.get("logic")
    if logic not in LOGICS:
        errors.add(f"{path}.logic", "Expected one of: AND, OR", "invalid_enum_value", _received(logic))
    groups = node.get("groups")
    if not isinstance(groups, list):
        errors.add(f"{path}.groups", "Expected an array of groups", "invalid_type", _received(groups))
        return
    if not groups:
        errors.add(f"{path}.groups", "At least one group is required", "too_small")
    for index, group in enumerate(groups):
        _group(group, f"{path}.groups.{index}", depth, errors)


def _group(group: Any, path: str, depth: int, errors: _Errors) -> None:
    if not isinstance(group, dict):
        errors.add(path, "Expected an object {filters, conditions?}", "invalid_type", json_type(group))
        return
    filters = group.get("filters", [])
    nested = group.get("conditions")
    if not isinstance(filters, list):
        errors.add(f"{path}.filters", "Expected an array of filters", "invalid_type", json_type(filters))
        filters = []
    if not filters and nested is None:
        errors.add(path, "A group needs at least one filter or a nested condition", "too_small")
    for index, filter_ in enumerate(filters):
        _filter(filter_, f"{path}.filters.{index}", errors)
    if nested is not None:
        _condition(nested, f"{path}.conditions", depth + 1, errors)


def _filter(filter_: Any, path: str, errors: _Errors) -> None:
    if not isinstance(filter_, dict):
        errors.add(path, "Expected an object {field, operator, value, unit?}", "invalid_type", json_type(filter_))
        return
    name, operator = filter_.get("field"), filter_.get("operator")
    field = parse_field(name) if isinstance(name, str) else None
    if field is None:
        errors.add(f"{path}.field", f"Unknown field; expected {FIELD_FORMS}", "invalid_string", _received(name))
    if operator not in OPERATORS:
        errors.add(
            f"{path}.operator", f"Unknown operator; expected one of: {', '.join(OPERATORS)}", "invalid_enum_value",
            _received(operator),
        )  # fmt: skip
        return
    if field is None:
        return
    allowed = FIELD_OPERATORS[field.kind]
    if operator not in allowed:
        errors.add(
            f"{path}.operator",
            f'Operator "{operator}" is not valid for field "{name}"; expected one of: {", ".join(allowed)}',
            "invalid_enum_value",
            operator,
        )
        return
    if field.kind == "segment":
        return
    if operator in WITH_UNIT:
        _unit_value(filter_, path, errors)
    elif operator not in NO_VALUE:
        _value(filter_, field.kind, operator, path, errors)


def _unit_value(filter_: dict, path: str, errors: _Errors) -> None:
    value, unit = filter_.get("value"), filter_.get("unit")
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        errors.add(f"{path}.value", "Expected a positive integer", "invalid_type", _received(value, "value", filter_))
    if "unit" not in filter_ or unit is None:
        errors.add(f"{path}.unit", "Required: one of days, hours, minutes", "invalid_type", "undefined")
    elif not isinstance(unit, str) or unit not in UNITS:
        errors.add(f"{path}.unit", "Expected one of: days, hours, minutes", "invalid_enum_value", _received(unit))


def _value(filter_: dict, kind: str, operator: str, path: str, errors: _Errors) -> None:
    at = f"{path}.value"
    if "value" not in filter_ or filter_["value"] is None:
        errors.add(at, "Required", "invalid_type", "undefined" if "value" not in filter_ else "null")
        return
    value = filter_["value"]
    if kind == "subscribed":
        if not isinstance(value, bool):
            errors.add(at, "Expected boolean", "invalid_type", json_type(value))
    elif kind == "email" or operator in TEXT:
        if not isinstance(value, str):
            errors.add(at, "Expected string", "invalid_type", json_type(value))
    elif kind == "date":
        if not isinstance(value, str) or not DATETIME.fullmatch(value) or not _parses(value):
            errors.add(at, "Expected a date (YYYY-MM-DD) or an ISO 8601 datetime", "invalid_string", _received(value))
    elif operator in COMPARISON:
        if as_number(value) is None:
            errors.add(at, "Expected a number (or a string that spells one)", "invalid_type", json_type(value))
    elif not isinstance(value, str | int | float):
        errors.add(at, "Expected a string, number or boolean", "invalid_type", json_type(value))
    elif isinstance(value, str) and DATE_ONLY.fullmatch(value) and not _parses(value):
        errors.add(at, "Not a real date: a YYYY-MM-DD value must name an existing day", "invalid_string", value)


def _parses(value: str) -> bool:
    try:
        parse_instant(value)
    except ValueError:
        return False
    return not (len(value) == 10 and not DATE_ONLY.fullmatch(value))


def _received(value: Any, key: str | None = None, container: dict | None = None) -> str:
    if key is not None and container is not None and key not in container:
        return "undefined"
    return json_type(value) if not isinstance(value, str) else value
