"""The layout of a workflow's drawing: rows by longest distance from the start, columns that keep a branch's arms
under it, a step's summary from its config, and a drawing that scales to its width."""

import uuid

import pytest

from workflows import drawing
from workflows.models import WorkflowStep, WorkflowTransition


def ids(*names: str) -> dict:
    return {name: uuid.uuid5(uuid.NAMESPACE_DNS, name) for name in names}


def test_a_step_sits_below_every_step_leading_to_it_even_across_rows():
    s = ids("trigger", "condition", "pause", "mail", "exit")
    edges = [
        (s["trigger"], s["condition"]),
        (s["condition"], s["pause"]),
        (s["pause"], s["mail"]),
        (s["condition"], s["mail"]),
        (s["mail"], s["exit"]),
    ]
    rows = drawing.rows(list(s.values()), edges)
    assert [rows[s[name]] for name in s] == [0, 1, 2, 3, 4]


def test_unconnected_steps_start_at_the_top_and_edges_to_unknown_steps_are_ignored():
    s = ids("trigger", "first", "orphan")
    rows = drawing.rows(list(s.values()), [(s["trigger"], s["first"]), (s["first"], uuid.uuid4())])
    assert rows == {s["trigger"]: 0, s["first"]: 1, s["orphan"]: 0}


def test_a_branchs_arms_stand_in_order_under_it():
    s = ids("trigger", "condition", "no-arm", "yes-arm", "after-yes", "after-no")
    edges = [
        (s["trigger"], s["condition"]),
        (s["condition"], s["no-arm"]),
        (s["condition"], s["yes-arm"]),
        (s["yes-arm"], s["after-yes"]),
        (s["no-arm"], s["after-no"]),
    ]
    # Created out of order: the row below the arms follows the arms' columns, not creation.
    order = [s["trigger"], s["condition"], s["no-arm"], s["yes-arm"], s["after-yes"], s["after-no"]]
    places = drawing.places(order, edges)
    assert places[s["no-arm"]] == (2, 0) and places[s["yes-arm"]] == (2, 1)
    assert places[s["after-no"]] == (3, 0) and places[s["after-yes"]] == (3, 1)


def step(step_type: str, config: dict, name: str = "") -> WorkflowStep:
    return WorkflowStep(id=uuid.uuid4(), type=step_type, name=name, config=config)


@pytest.mark.parametrize(
    ("step_type", "config", "summary"),
    [
        ("TRIGGER", {"eventName": "signup"}, "on signup"),
        ("TRIGGER", {}, "started by hand"),
        ("DELAY", {"amount": 3, "unit": "days"}, "for 3 days"),
        ("WAIT_FOR_EVENT", {"eventName": "purchase", "timeout": 7200}, "for purchase, at most 2 hours"),
        ("WAIT_FOR_EVENT", {"eventName": "purchase", "timeout": 90}, "for purchase, at most 90 seconds"),
        ("WAIT_FOR_EVENT", {"eventName": "purchase"}, "for purchase"),
        ("CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, "data.plan equals pro"),
        ("CONDITION", {"field": "email", "operator": "is_set"}, "email is_set"),
        ("WEBHOOK", {"url": "https://hooks.example.com/x?y=1", "method": "PUT"}, "PUT hooks.example.com"),
        ("UPDATE_CONTACT", {"updates": {"plan": "pro", "tier": 2}, "subscriptionAction": "none"}, "set plan, tier"),
        ("UPDATE_CONTACT", {"subscriptionAction": "unsubscribe"}, "unsubscribe"),
        ("EXIT", {"reason": "Converted"}, "Converted"),
        ("EXIT", {}, "end"),
    ],
)
def test_a_steps_summary_says_what_it_does(step_type, config, summary):
    assert drawing.summary(step(step_type, config)) == summary


def test_the_drawing_scales_to_its_width_and_escapes_names():
    trigger = step("TRIGGER", {"eventName": "signup"}, "Trigger: signup")
    condition = step("CONDITION", {"field": "email", "operator": "is_set"}, "<b>Known?</b> and a very long name")
    done = step("EXIT", {}, "Done")
    transitions = [
        WorkflowTransition(from_step_id=trigger.id, to_step_id=condition.id),
        WorkflowTransition(from_step_id=condition.id, to_step_id=done.id, branch="yes"),
    ]
    counts = {condition.id: {"entered": 5, "waiting": 0, "completed": 4, "failed": 1}}
    svg = drawing.svg([trigger, condition, done], transitions, counts)
    width = 2 * drawing.MARGIN + drawing.BOX_WIDTH
    height = 2 * drawing.MARGIN + 3 * drawing.BOX_HEIGHT + 2 * drawing.GAP_Y
    assert f'viewBox="0 0 {width} {height}"' in svg and "width:100%" in svg
    assert "&lt;b&gt;Known?&lt;/b&gt; and a very lo…" in svg and "<b>" not in svg
    assert "5 in · 0 waiting · 4 done · 1 failed" in svg and "0 in · 0 waiting · 0 done · 0 failed" in svg
    assert svg.count('class="workflow-transition"') == 2 and ">yes</text>" in svg
