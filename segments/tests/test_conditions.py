"""The condition engine through its public functions: every operator on every field kind, on the database in use
(SQLite by default, PostgreSQL with DATABASE_URL) and in Python; both must give the same answer."""

import pytest

from contacts.models import Contact
from core.errors import ValidationFailed
from segments.conditions import condition_matches, condition_q, condition_validate
from segments.tests.conftest import NOW


def one(field, operator, value=None, unit=None, **extra):
    filter_ = {"field": field, "operator": operator, **extra}
    if value is not None:
        filter_["value"] = value
    if unit is not None:
        filter_["unit"] = unit
    return {"logic": "AND", "groups": [{"filters": [filter_]}]}


def selected(project, condition) -> set[str]:
    condition_validate(condition)
    contacts = Contact.objects.filter(project=project.project)
    in_sql = {c.email.split("@")[0] for c in contacts.filter(condition_q(condition, now=NOW))}
    in_python = {c.email.split("@")[0] for c in contacts if condition_matches(condition, contact=c, now=NOW)}
    assert in_sql == in_python, (in_sql, in_python)
    return in_sql


CASES = [
    # email: case-insensitive
    (one("email", "equals", "ANN@example.test"), {"ann"}),
    (one("email", "notEquals", "ann@example.test"), {"bob", "cat", "dan", "eve", "fay"}),
    (one("email", "contains", "N@"), {"ann", "dan"}),
    (one("email", "notContains", "an"), {"bob", "cat", "eve", "fay"}),
    # subscribed
    (one("subscribed", "equals", True), {"ann", "cat", "eve"}),
    (one("subscribed", "notEquals", True), {"bob", "dan", "fay"}),
    # dates: created 0, 10, 20... days before NOW; updated 0, 1, 2... hours before
    (one("createdAt", "within", 15, "days"), {"ann", "bob"}),
    (one("createdAt", "olderThan", 15, "days"), {"cat", "dan", "eve", "fay"}),
    (one("updatedAt", "within", 90, "minutes"), {"ann", "bob"}),
    (one("updatedAt", "olderThan", 3, "hours"), {"eve", "fay"}),
    (one("createdAt", "equals", "2026-11-12"), {"bob"}),
    (one("createdAt", "notEquals", "2026-11-12"), {"ann", "cat", "dan", "eve", "fay"}),
    (one("createdAt", "equals", "2026-11-22T12:00:00Z"), {"ann"}),
    (one("createdAt", "greaterThan", "2026-11-12"), {"ann"}),
    (one("createdAt", "greaterThanOrEqual", "2026-11-12"), {"ann", "bob"}),
    (one("createdAt", "lessThan", "2026-11-12"), {"cat", "dan", "eve", "fay"}),
    (one("createdAt", "lessThanOrEqual", "2026-11-12"), {"bob", "cat", "dan", "eve", "fay"}),
    (one("createdAt", "greaterThan", "2026-11-12T12:00:00Z"), {"ann"}),
    (one("createdAt", "lessThanOrEqual", "2026-11-12T12:00:00.000Z"), {"bob", "cat", "dan", "eve", "fay"}),
    # data equals: type-strict
    (one("data.plan", "equals", "pro"), {"ann"}),
    (one("data.plan", "equals", ""), {"cat"}),
    (one("data.age", "equals", 30), {"ann"}),
    (one("data.age", "equals", 31), set()),  # "31" is a string
    (one("data.age", "equals", "31"), {"bob"}),
    (one("data.age", "equals", 0), {"cat"}),
    (one("data.vip", "equals", True), {"ann"}),  # 1 is not true
    (one("data.vip", "equals", False), {"bob"}),
    (one("data.vip", "equals", 1), {"fay"}),
    (one("data.address.city", "equals", "Oslo"), {"dan"}),
    (one("data.address.zip", "equals", "0150"), {"dan"}),
    (one("data.tags.0", "equals", "a"), set()),  # paths do not index arrays
    (one("data.tags", "equals", "a"), set()),  # nor does equality look into them (PostgreSQL's @> would at the top)
    (one("data.score", "equals", 7.5), {"bob"}),
    (one("data.plan", "notEquals", "pro"), {"bob", "cat", "dan", "fay"}),  # null is present; eve lacks the key
    # a YYYY-MM-DD value matches the whole UTC day, offsets converted
    (one("data.signup", "equals", "2026-01-05"), {"ann", "bob", "dan", "fay"}),
    (one("data.signup", "equals", "2026-01-06"), {"cat"}),
    (one("data.signup", "notEquals", "2026-01-06"), {"ann", "bob", "dan", "fay"}),
    (one("data.seen", "equals", "2026-02-28"), set()),
    # within / olderThan on data dates (2026-02-30 is not a date; 5 is not a date)
    (one("data.seen", "within", 2, "days"), {"ann", "fay"}),
    (one("data.seen", "within", 45, "minutes"), {"fay"}),
    (one("data.seen", "olderThan", 2, "days"), {"bob"}),
    (one("data.seen", "olderThan", 1, "hours"), {"bob"}),
    (one("data.signup", "olderThan", 300, "days"), {"ann", "bob", "cat", "dan", "fay"}),
    # negative operators never match a missing key (null counts as present)
    (one("data.plan", "notEquals", "pro"), {"bob", "cat", "dan", "fay"}),
    (one("data.address.city", "notEquals", "Oslo"), {"fay"}),
    (one("data.plan", "contains", "ro"), {"ann", "bob", "fay"}),
    (one("data.plan", "contains", "Pro"), {"bob"}),  # case-sensitive
    (one("data.plan", "notContains", "ro"), {"cat", "dan"}),
    (one("data.age", "contains", "3"), {"bob"}),  # only strings contain
    # numbers and numeric strings compare alike
    (one("data.age", "greaterThan", 30), {"bob"}),
    (one("data.age", "greaterThanOrEqual", "30"), {"ann", "bob"}),
    (one("data.age", "lessThan", 5), {"cat"}),
    (one("data.age", "lessThanOrEqual", 5.0), {"cat", "fay"}),
    (one("data.score", "greaterThan", 10), {"ann"}),  # "x42" is not a number
    (one("data.score", "lessThan", 8), {"bob"}),
    (one("data.plan", "greaterThan", 0), set()),
    # exists = present and not null; "", 0, false exist
    (one("data.plan", "exists"), {"ann", "bob", "cat", "fay"}),
    (one("data.plan", "notExists"), {"dan", "eve"}),
    (one("data.vip", "exists"), {"ann", "bob", "fay"}),
    (one("data.age", "exists"), {"ann", "bob", "cat", "fay"}),
    (one("data.address.city", "exists"), {"dan", "fay"}),
    (one("data.address", "exists"), {"dan", "fay"}),
    # events: ann purchased 2 days ago, bob 40 days ago and logged in 5 minutes ago
    (one("event.purchase", "triggered"), {"ann", "bob"}),
    (one("event.purchase", "notTriggered"), {"cat", "dan", "eve", "fay"}),
    (one("event.purchase", "triggeredWithin", 7, "days"), {"ann"}),
    (one("event.purchase", "notTriggeredWithin", 7, "days"), {"bob", "cat", "dan", "eve", "fay"}),
    (one("event.purchase", "triggeredOlderThan", 30, "days"), {"bob"}),
    (one("event.login", "triggeredWithin", 10, "minutes"), {"bob"}),
    (one("event.login", "triggeredWithin", 1, "minutes"), set()),
    # email activity
    (one("email.sent", "triggered"), {"ann", "cat"}),
    (one("email.sent", "notTriggered"), {"bob", "dan", "eve", "fay"}),
    (one("email.opened", "triggeredWithin", 2, "hours"), {"ann"}),
    (one("email.sent", "triggeredWithin", 7, "days"), {"ann"}),
    (one("email.sent", "notTriggeredWithin", 7, "days"), {"bob", "cat", "dan", "eve", "fay"}),
    (one("email.bounced", "triggeredOlderThan", 10, "days"), {"cat"}),
    (one("email.clicked", "triggered"), set()),
    (one("email.complained", "notTriggered"), {"ann", "bob", "cat", "dan", "eve", "fay"}),
    (one("email.delivered", "triggered"), set()),
    # groups and logic
    (
        {
            "logic": "OR",
            "groups": [
                {"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]},
                {"filters": [{"field": "data.age", "operator": "lessThan", "value": 1}]},
            ],
        },
        {"ann", "cat"},
    ),
    (
        {
            "logic": "AND",
            "groups": [
                {"filters": [{"field": "data.plan", "operator": "contains", "value": "ro"}]},
                {
                    "filters": [{"field": "subscribed", "operator": "equals", "value": False}],
                    "conditions": {
                        "logic": "OR",
                        "groups": [
                            {"filters": [{"field": "event.purchase", "operator": "triggered"}]},
                            {"filters": [{"field": "data.address.city", "operator": "equals", "value": "oslo"}]},
                        ],
                    },
                },
            ],
        },
        {"bob", "fay"},
    ),
    (
        {"logic": "AND", "groups": [{"filters": [], "conditions": one("data.plan", "exists")}]},
        {"ann", "bob", "cat", "fay"},
    ),
]


@pytest.mark.parametrize(("condition", "expected"), CASES)
def test_operator_selects_expected_contacts_in_sql_and_python(project, people, condition, expected):
    assert selected(project, condition) == expected


def f(**filter_):
    return {"logic": "AND", "groups": [{"filters": [filter_]}]}


def deep(levels):
    node = f(field="email", operator="contains", value="a")
    for _ in range(levels - 1):
        node = {"logic": "AND", "groups": [{"filters": [], "conditions": node}]}
    return node


BAD = [
    (
        {"logic": "XOR", "groups": [{"filters": [{"field": "email", "operator": "contains", "value": "a"}]}]},
        "condition.logic",
        "AND, OR",
    ),
    ({"logic": "AND", "groups": []}, "condition.groups", "At least one group"),
    ({"logic": "AND", "groups": [{"filters": []}]}, "condition.groups.0", "at least one filter or a nested condition"),
    ({"logic": "AND"}, "condition.groups", "array"),
    ("AND", "condition", "object"),
    (f(field="email", operator="between", value="a"), "condition.groups.0.filters.0.operator", "notEquals"),
    (
        f(field="email", operator="greaterThan", value="a"),
        "condition.groups.0.filters.0.operator",
        "equals, notEquals, contains, notContains",
    ),
    (f(field="event.buy", operator="equals", value="a"), "condition.groups.0.filters.0.operator", "triggered"),
    (f(field="createdAt", operator="within", value=3), "condition.groups.0.filters.0.unit", "days, hours, minutes"),
    (
        f(field="createdAt", operator="within", value=3, unit="weeks"),
        "condition.groups.0.filters.0.unit",
        "days, hours, minutes",
    ),
    (
        f(field="createdAt", operator="within", value=0, unit="days"),
        "condition.groups.0.filters.0.value",
        "positive integer",
    ),
    (
        f(field="event.buy", operator="triggeredWithin", value="3", unit="days"),
        "condition.groups.0.filters.0.value",
        "positive integer",
    ),
    (f(field="data.age", operator="greaterThan", value="many"), "condition.groups.0.filters.0.value", "number"),
    (
        f(field="createdAt", operator="greaterThan", value="yesterday"),
        "condition.groups.0.filters.0.value",
        "YYYY-MM-DD",
    ),
    (f(field="createdAt", operator="equals", value="2026-02-30"), "condition.groups.0.filters.0.value", "YYYY-MM-DD"),
    (f(field="data.plan", operator="equals"), "condition.groups.0.filters.0.value", "Required"),
    (f(field="data.day", operator="equals", value="2026-02-30"), "condition.groups.0.filters.0.value", "real date"),
    (f(field="data.day", operator="within", value=2), "condition.groups.0.filters.0.unit", "days, hours"),
    (
        f(field="data.plan", operator="equals", value={"a": 1}),
        "condition.groups.0.filters.0.value",
        "string, number or boolean",
    ),
    (f(field="data.plan", operator="contains", value=1), "condition.groups.0.filters.0.value", "string"),
    (f(field="subscribed", operator="equals", value="yes"), "condition.groups.0.filters.0.value", "boolean"),
    (f(field="data.", operator="exists"), "condition.groups.0.filters.0.field", "data.<path>"),
    (f(field="data.a..b", operator="exists"), "condition.groups.0.filters.0.field", "data.<path>"),
    (f(field='data.a"b', operator="exists"), "condition.groups.0.filters.0.field", "data.<path>"),
    (f(field="data.a\\b", operator="exists"), "condition.groups.0.filters.0.field", "data.<path>"),
    (f(field="name", operator="exists"), "condition.groups.0.filters.0.field", "event.<name>"),
    (f(field="email.read", operator="triggered"), "condition.groups.0.filters.0.field", "email.<sent|delivered"),
    (f(field="email.sent", operator="equals", value="x"), "condition.groups.0.filters.0.operator", "triggered"),
    (deep(11), "condition" + ".groups.0.conditions" * 10, "at most 10"),
    (deep(50), "condition" + ".groups.0.conditions" * 10, "at most 10"),
]


@pytest.mark.parametrize(("condition", "path", "message"), BAD)
def test_invalid_condition_names_the_path_and_what_is_allowed(condition, path, message):
    with pytest.raises(ValidationFailed) as caught:
        condition_validate(condition)
    errors = caught.value.errors
    assert caught.value.status == 422
    assert path in [e["field"] for e in errors], errors
    assert any(message in e["message"] for e in errors if e["field"] == path), errors


def test_ten_levels_are_accepted():
    condition_validate(deep(10))


def test_every_error_of_a_tree_is_reported():
    condition = {
        "logic": "AND",
        "groups": [
            {"filters": [{"field": "email", "operator": "equals", "value": "a"}, {"field": "x", "operator": "nope"}]},
            {"filters": [{"field": "createdAt", "operator": "within", "value": 1, "unit": "weeks"}]},
        ],
    }
    with pytest.raises(ValidationFailed) as caught:
        condition_validate(condition)
    fields = [e["field"] for e in caught.value.errors]
    assert fields == [
        "condition.groups.0.filters.1.field",
        "condition.groups.0.filters.1.operator",
        "condition.groups.1.filters.0.unit",
    ]
