"""Property: for any valid condition and any contacts, the SQL path and the Python path select the same contacts."""

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contacts.models import Contact, Event
from segments.conditions import condition_matches, condition_q, condition_validate
from segments.tests.conftest import NOW

SCALARS = st.sampled_from(
    [
        "",
        "pro",
        "Pro",
        "42",
        "-3.5",
        "x1",
        "2026-01-05",
        "2026-01-05T08:00:00Z",
        "2026-01-05T23:30:00-02:00",
        "2026-01-04 23:00",
        "2026-02-30",
        "2026-11-21T12:00:00.5+01:00",
        "2026-11-22T10:00:00Z",
        0,
        1,
        42,
        -3.5,
        2.5,
        True,
        False,
        None,
    ]
)
VALUES = st.one_of(SCALARS, st.fixed_dictionaries({}, optional={"k": SCALARS}), st.just([1, "a"]))
KEYS = ("a", "b")
DATA = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=2)
FIELDS = st.sampled_from(["data.a", "data.b", "data.a.k"])
COMPARABLE = st.sampled_from([0, 1, 42, -3.5, 2.5, "42", "-3.5"])


def filters():
    data = st.one_of(
        st.builds(
            lambda f, o, v: {"field": f, "operator": o, "value": v},
            FIELDS,
            st.sampled_from(["equals", "notEquals"]),
            SCALARS.filter(lambda v: v is not None and v != "2026-02-30"),
        ),
        st.builds(
            lambda f, o, v: {"field": f, "operator": o, "value": v},
            FIELDS,
            st.sampled_from(["contains", "notContains"]),
            st.sampled_from(["", "r", "Pro", "2026"]),
        ),
        st.builds(
            lambda f, o, v: {"field": f, "operator": o, "value": v},
            FIELDS,
            st.sampled_from(["greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"]),
            COMPARABLE,
        ),
        st.builds(lambda f, o: {"field": f, "operator": o}, FIELDS, st.sampled_from(["exists", "notExists"])),
        st.builds(
            lambda f, o, v, u: {"field": f, "operator": o, "value": v, "unit": u},
            FIELDS,
            st.sampled_from(["within", "olderThan"]),
            st.integers(1, 48),
            st.sampled_from(["hours", "days"]),
        ),
    )
    other = st.one_of(
        st.builds(
            lambda o, v: {"field": "subscribed", "operator": o, "value": v},
            st.sampled_from(["equals", "notEquals"]),
            st.booleans(),
        ),
        st.builds(
            lambda o, v: {"field": "email", "operator": o, "value": v},
            st.sampled_from(["equals", "notEquals", "notContains"]),
            st.sampled_from(["C0@example.test", "c1@EXAMPLE.test", "c2", "%"]),
        ),
        st.builds(
            lambda o, v: {"field": "createdAt", "operator": o, "value": v},
            st.sampled_from(
                ["equals", "notEquals", "greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"]
            ),
            st.sampled_from(["2026-11-12", "2026-11-20", "2026-11-12T11:53:00Z", "2026-11-02T11:53:00.000+00:00"]),
        ),
        st.builds(lambda v: {"field": "email", "operator": "contains", "value": v}, st.sampled_from(["0", "C1", "@"])),
        st.builds(
            lambda o, v: {"field": "createdAt", "operator": o, "value": v, "unit": "days"},
            st.sampled_from(["within", "olderThan"]),
            st.integers(1, 30),
        ),
        st.builds(
            lambda o, v: {"field": "event.buy", "operator": o, "value": v, "unit": "hours"},
            st.sampled_from(["triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]),
            st.integers(1, 100),
        ),
        st.builds(lambda o: {"field": "event.buy", "operator": o}, st.sampled_from(["triggered", "notTriggered"])),
        st.builds(
            lambda f, o, v: {"field": f, "operator": o, "value": v, "unit": "hours"},
            st.sampled_from(["email.sent", "email.opened"]),
            st.sampled_from(["triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]),
            st.integers(1, 100),
        ),
        st.builds(
            lambda f, o: {"field": f, "operator": o},
            st.sampled_from(["email.sent", "email.opened"]),
            st.sampled_from(["triggered", "notTriggered"]),
        ),
    )
    return st.one_of(data, data, other)


CONDITIONS = st.recursive(
    st.builds(
        lambda fs, logic: {"logic": logic, "groups": [{"filters": fs}]},
        st.lists(filters(), min_size=1, max_size=3),
        st.sampled_from(["AND", "OR"]),
    ),
    lambda inner: st.builds(
        lambda groups, logic: {"logic": logic, "groups": groups},
        st.lists(
            st.builds(lambda fs, c: {"filters": fs, "conditions": c}, st.lists(filters(), max_size=2), inner),
            min_size=1,
            max_size=2,
        ),
        st.sampled_from(["AND", "OR"]),
    ),
    max_leaves=4,
)
HOURS = st.one_of(st.none(), st.integers(0, 200))
CONTACT = st.tuples(
    DATA,
    st.booleans(),
    st.integers(0, 40),
    st.lists(st.integers(0, 200), max_size=2),
    st.lists(st.tuples(HOURS, HOURS), max_size=2),
)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(condition=CONDITIONS, rows=st.lists(CONTACT, min_size=1, max_size=5))
def test_sql_and_python_agree(project, condition, rows):
    condition_validate(condition)
    Contact.objects.filter(project=project.project).delete()
    for index, (data, subscribed, age_days, event_hours, emails) in enumerate(rows):
        contact = Contact.objects.create(
            project=project.project,
            email=f"c{index}@example.test",
            data=data,
            subscribed=subscribed,
            created_at=NOW - timedelta(days=age_days, minutes=7),
        )
        for hours in event_hours:
            Event.objects.create(
                project=project.project, contact=contact, name="buy", created_at=NOW - timedelta(hours=hours, minutes=7)
            )
    contacts = Contact.objects.filter(project=project.project)
    in_sql = set(contacts.filter(condition_q(condition, now=NOW)).values_list("email", flat=True))
    in_python = {c.email for c in contacts if condition_matches(condition, contact=c, now=NOW)}
    assert in_sql == in_python
