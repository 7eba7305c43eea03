"""Steps and transitions: the graph rules of a workflow, through the API."""

import pytest

from workflows.models import WorkflowExecution, WorkflowStep, WorkflowTransition

pytestmark = pytest.mark.django_db

LOOP = "This connection would create a loop in the workflow"


def test_steps_connect_after_the_last_open_step_unless_told_not_to(api):
    workflow = api.workflow()
    delay = api.step(workflow, "DELAY", {"amount": 2, "unit": "days"}, name="Wait", position={"x": 10, "y": 20})
    assert delay == {
        "id": delay["id"],
        "type": "DELAY",
        "name": "Wait",
        "position": {"x": 10.0, "y": 20.0},
        "config": {"amount": 2, "unit": "days"},
        "templateId": None,
        "createdAt": delay["createdAt"],
        "updatedAt": delay["updatedAt"],
    }
    api.step(workflow, "WAIT_FOR_EVENT", {"eventName": "activated"}, name="Activated?")
    api.step(workflow, "EXIT", name="Done")
    api.step(workflow, "EXIT", name="Loose", autoConnect=False)
    assert api.edges(workflow) == {
        ("Trigger: signup", "Wait", None),
        ("Wait", "Activated?", None),
        ("Activated?", "Done", "EVENT"),
    }
    detail = api.get(workflow)
    assert [s["name"] for s in detail["steps"]] == ["Trigger: signup", "Wait", "Activated?", "Done", "Loose"]


def test_nothing_connects_after_an_exit_or_a_condition(api):
    workflow = api.workflow()
    api.step(workflow, "CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, name="Pro?")
    api.step(workflow, "EXIT", name="Done")
    assert api.edges(workflow) == {("Trigger: signup", "Pro?", None)}


def branching(api):
    """TRIGGER -> Pro? -yes-> Send -> Done; -no-> Wait."""
    workflow = api.workflow()
    trigger = api.trigger(workflow)
    condition = api.step(
        workflow, "CONDITION", {"field": "data.plan", "operator": "equals", "value": "pro"}, name="Pro?"
    )
    send = api.step(workflow, "EXIT", name="Send", autoConnect=False)
    wait = api.step(workflow, "DELAY", {"amount": 1, "unit": "hours"}, name="Wait", autoConnect=False)
    done = api.step(workflow, "EXIT", name="Done", autoConnect=False)
    return workflow, {"trigger": trigger, "condition": condition, "send": send, "wait": wait, "done": done}


def test_a_condition_has_one_transition_per_branch(api):
    workflow, s = branching(api)
    yes = api.link(workflow, s["condition"], s["send"], branch="yes")
    assert yes == {
        "id": yes["id"],
        "fromStepId": s["condition"]["id"],
        "toStepId": s["send"]["id"],
        "branch": "yes",
        "waitOutcome": None,
    }
    api.link(workflow, s["condition"], s["wait"], branch="no")
    error = api.link(workflow, s["condition"], s["done"], branch="no", status=422)["error"]
    assert error["errors"][0]["field"] == "branch" and "already connected" in error["message"]
    error = api.link(workflow, s["condition"], s["done"], status=422)["error"]
    assert error["errors"][0]["field"] == "branch"


@pytest.mark.parametrize(
    "source, target, body, field, message",
    [
        ("wait", "wait", {}, "toStepId", LOOP),
        ("send", "trigger", {}, "toStepId", "into the trigger"),
        ("done", "wait", {}, "fromStepId", "EXIT"),
        ("wait", "done", {"branch": "yes"}, "branch", "Only a CONDITION"),
        ("wait", "done", {"waitOutcome": "EVENT"}, "waitOutcome", "Only a WAIT_FOR_EVENT"),
        ("trigger", "done", {}, "fromStepId", "already has an outgoing transition"),
        ("wait", "done", {"branch": "maybe"}, "branch", "valid choice"),
    ],
)
def test_refused_transitions(api, source, target, body, field, message):
    workflow, s = branching(api)
    before = WorkflowTransition.objects.count()
    error = api.link(workflow, s[source], s[target], status=422, **body)["error"]
    assert error["errors"][0]["field"] == field
    assert message in error["errors"][0]["message"]
    assert WorkflowTransition.objects.count() == before


def test_a_transition_closing_a_cycle_is_refused(api):
    workflow = api.workflow()
    first = api.step(workflow, "DELAY", {"amount": 1, "unit": "days"}, name="One")
    second = api.step(workflow, "DELAY", {"amount": 1, "unit": "days"}, name="Two")
    error = api.link(workflow, second, first, status=422)["error"]
    assert error["message"] == f"Validation failed: toStepId: {LOOP}"


def test_unknown_step_ids_are_422_at_the_field(api):
    workflow = api.workflow()
    trigger = api.trigger(workflow)
    ghost = {"id": "00000000-0000-4000-8000-000000000000"}
    error = api.link(workflow, trigger, ghost, status=422)["error"]
    assert [e["field"] for e in error["errors"]] == ["toStepId"]
    error = api.link(workflow, {"id": "nope"}, trigger, status=422)["error"]
    assert error["errors"][0] == {"field": "fromStepId", "message": "Must be a valid UUID.", "code": "invalid_string"}


def test_wait_outcomes_and_the_timeout_branch(api):
    workflow = api.workflow()
    wait = api.step(workflow, "WAIT_FOR_EVENT", {"eventName": "paid"}, name="Paid?")
    late = api.step(workflow, "EXIT", name="Late", autoConnect=False)
    paid = api.step(workflow, "EXIT", name="Paid", autoConnect=False)
    error = api.link(workflow, wait, late, waitOutcome="TIMEOUT", status=422)["error"]
    assert error["errors"][0]["field"] == "waitOutcome"
    api.call(
        "patch",
        f"/workflows/{workflow['id']}/steps/{wait['id']}",
        {"config": {"eventName": "paid", "timeout": 3600}},
        status=200,
    )
    api.link(workflow, wait, late, waitOutcome="TIMEOUT")
    api.link(workflow, wait, paid)
    assert ("Paid?", "Paid", "EVENT") in api.edges(workflow)
    error = api.call(
        "patch", f"/workflows/{workflow['id']}/steps/{wait['id']}", {"config": {"eventName": "paid"}}, status=422
    )["error"]
    assert error["errors"][0]["field"] == "config.timeout"


def test_the_trigger_cannot_be_deleted(api):
    workflow = api.workflow()
    trigger = api.trigger(workflow)
    error = api.call("delete", f"/workflows/{workflow['id']}/steps/{trigger['id']}", status=409)["error"]
    assert error["code"] == "CONFLICT"
    assert WorkflowStep.objects.count() == 1


def test_deleting_a_step_removes_what_only_it_reached(api):
    workflow, s = branching(api)
    api.link(workflow, s["condition"], s["send"], branch="yes")
    api.link(workflow, s["condition"], s["wait"], branch="no")
    api.link(workflow, s["wait"], s["done"])
    extra = api.step(workflow, "EXIT", name="Other", autoConnect=False)
    # Done is also reached from Wait; deleting Send leaves it.
    api.call("delete", f"/workflows/{workflow['id']}/steps/{s['send']['id']}", status=204)
    names = [step["name"] for step in api.get(workflow)["steps"]]
    assert names == ["Trigger: signup", "Pro?", "Wait", "Done", "Other"]
    # Deleting the condition takes Wait and Done (reached only through it), not the unconnected Other.
    api.call("delete", f"/workflows/{workflow['id']}/steps/{s['condition']['id']}", status=204)
    assert [step["name"] for step in api.get(workflow)["steps"]] == ["Trigger: signup", "Other"]
    assert extra["id"] in {step["id"] for step in api.get(workflow)["steps"]}


def test_splice_reconnects_the_predecessor_to_the_successor(api):
    workflow = api.workflow()
    api.step(workflow, "DELAY", {"amount": 1, "unit": "days"}, name="One")
    two = api.step(workflow, "DELAY", {"amount": 2, "unit": "days"}, name="Two")
    api.step(workflow, "EXIT", name="Done")
    api.call("delete", f"/workflows/{workflow['id']}/steps/{two['id']}?splice=true", status=204)
    assert api.edges(workflow) == {("Trigger: signup", "One", None), ("One", "Done", None)}


def test_splice_keeps_the_branch_and_refuses_a_condition(api):
    workflow, s = branching(api)
    api.link(workflow, s["condition"], s["wait"], branch="no")
    api.link(workflow, s["wait"], s["done"])
    api.call("delete", f"/workflows/{workflow['id']}/steps/{s['wait']['id']}?splice=true", status=204)
    assert ("Pro?", "Done", "no") in api.edges(workflow)
    error = api.call("delete", f"/workflows/{workflow['id']}/steps/{s['condition']['id']}?splice=true", status=422)
    assert error["error"]["errors"][0]["field"] == "splice"


def test_a_step_an_execution_is_on_cannot_be_deleted(live, api, contact):
    api.start(live, contact)
    send = api.get(live)["steps"][1]
    # Where the engine would have moved it.
    WorkflowExecution.objects.update(current_step_id=send["id"], status="WAITING")
    error = api.call("delete", f"/workflows/{live['id']}/steps/{send['id']}", status=409)["error"]
    assert error["details"] == {"activeExecutions": 1}


def test_delete_a_transition(api):
    workflow = api.workflow()
    api.step(workflow, "EXIT", name="Done")
    transition = api.get(workflow)["transitions"][0]
    api.call("delete", f"/workflows/{workflow['id']}/transitions/{transition['id']}", status=204)
    assert api.get(workflow)["transitions"] == []
    api.call("delete", f"/workflows/{workflow['id']}/transitions/{transition['id']}", status=404)


def test_update_a_step(api):
    workflow = api.workflow()
    step = api.step(workflow, "DELAY", {"amount": 1, "unit": "days"})
    assert step["name"] == "Delay"
    path = f"/workflows/{workflow['id']}/steps/{step['id']}"
    updated = api.call("patch", path, {"name": "Pause", "position": {"x": 1, "y": 2}}, status=200)
    assert (updated["name"], updated["position"], updated["config"]) == ("Pause", {"x": 1.0, "y": 2.0}, step["config"])
    updated = api.call("patch", path, {"config": {"amount": 3, "unit": "hours"}}, status=200)
    assert updated["config"] == {"amount": 3, "unit": "hours"}
    error = api.call("patch", path, {"config": {"amount": 0, "unit": "hours"}}, status=422)["error"]
    assert error["errors"][0]["field"] == "config.amount"
    trigger = api.trigger(workflow)
    error = api.call("patch", f"/workflows/{workflow['id']}/steps/{trigger['id']}", {"config": {}}, status=422)
    assert error["error"]["errors"][0]["field"] == "config"
