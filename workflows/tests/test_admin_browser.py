"""The workflow console in a real browser (config/tests/browser.py): an operator builds a branching workflow through
the admin's forms, with JavaScript on and off, enables it and reads its graph; the workflow page, with executions
run through the engine, and the graph's forms pass axe and the phone checks (screenshots with SCREENSHOT_DIR)."""

import json

import pytest

from accounts.models import User
from contacts.models import Contact
from workflows.models import Workflow, WorkflowExecution, WorkflowTransition
from workflows.services import execution_start, step_add, transition_add, workflow_create, workflow_update

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "operator@example.test", "the operator's password"
CONDITION = {"field": "data.plan", "operator": "equals", "value": "pro"}


@pytest.fixture
def operator(db):
    return User.objects.create_superuser(email=EMAIL, password=PASSWORD)


def log_in_at(browser, path: str) -> None:
    browser.open(f"/admin/login/?next={path}")
    browser.fill("username", EMAIL)
    browser.fill("password", PASSWORD)
    browser.press("Log in")


def choose_option(browser, name: str, label: str) -> None:
    from selenium.webdriver.support.select import Select

    Select(browser.driver.find_element("name", name)).select_by_visible_text(label)


def field_errors(browser, name: str) -> str:
    """The refusal shown with the field `name` (Django ties it to the field with aria-describedby)."""
    field = browser.driver.find_element("name", name)
    return " ".join(
        browser.driver.find_element("id", ref).text
        for ref in (field.get_attribute("aria-describedby") or "").split()
        if ref.endswith("_error")
    )


def add_step(browser, step_type: str, name: str, config: dict, *, connect: bool = True) -> None:
    browser.follow("Add a step")
    choose_option(browser, "step_type", step_type)
    browser.fill("name", name)
    browser.fill("config", json.dumps(config))
    if not connect:
        browser.driver.find_element("name", "auto_connect").click()
    browser.press("Add the step")


def add_transition(browser, source: str, target: str, branch: str) -> None:
    browser.follow("Add a transition")
    choose_option(browser, "from_step", source)
    choose_option(browser, "to_step", target)
    choose_option(browser, "branch", branch)
    browser.press("Add the transition")


def svg_texts(browser) -> list[str]:
    return [text.text for text in browser.driver.find_elements("css selector", "svg.workflow-graph text")]


def test_an_operator_builds_a_branching_workflow_enables_it_and_sees_its_graph(
    any_browser, operator, project, template
):
    browser = any_browser
    log_in_at(browser, "/admin/workflows/workflow/add/")
    browser.fill("project", str(project.project.pk))
    browser.fill("name", "Onboarding")
    browser.fill("event_name", "signup")
    browser.press("Save and continue editing")
    assert "was added successfully" in browser.text
    workflow = Workflow.objects.get()
    assert (workflow.project_id, workflow.enabled) == (project.project.pk, False)

    # A config the service refuses is shown at the config field, and nothing is added.
    browser.follow("Add a step")
    choose_option(browser, "step_type", "CONDITION")
    browser.fill("name", "Pro plan?")
    browser.fill("config", json.dumps({"field": "data.plan", "operator": "equals"}))
    browser.press("Add the step")
    assert "Please correct the errors below." in browser.text
    assert "value:" in field_errors(browser, "config")
    assert workflow.steps.count() == 1
    browser.fill("config", json.dumps(CONDITION))
    browser.press("Add the step")
    assert "The step was added." in browser.text

    add_step(browser, "SEND_EMAIL", "Welcome pro", {"templateId": str(template.id)})
    add_step(browser, "EXIT", "Not pro", {"reason": "Free plan"}, connect=False)
    add_transition(browser, "Pro plan? (CONDITION)", "Welcome pro (SEND_EMAIL)", "Yes")
    add_transition(browser, "Pro plan? (CONDITION)", "Not pro (EXIT)", "No")
    assert "The transition was added." in browser.text

    browser.driver.find_element("name", "enabled").click()
    browser.press("Save and continue editing")
    assert "was changed successfully" in browser.text
    assert Workflow.objects.get(id=workflow.id).enabled is True

    texts = svg_texts(browser)
    for shown in ("Trigger: signup", "Pro plan?", "Welcome pro", "Not pro", "yes", "no", "data.plan equals pro"):
        assert shown in texts
    edges = {
        (t.from_step.name, t.to_step.name, t.branch)
        for t in WorkflowTransition.objects.filter(workflow=workflow).select_related("from_step", "to_step")
    }
    assert edges == {("Trigger: signup", "Pro plan?", ""), ("Pro plan?", "Welcome pro", "yes"), ("Pro plan?", "Not pro", "no")}  # fmt: skip


def test_the_workflow_pages_are_accessible_and_fit_a_phone(browser, operator, project, template, smtp_sink):
    workflow = workflow_create(project=project.project, name="Onboarding", event_name="signup")
    condition = step_add(workflow=workflow, step_type="CONDITION", config=CONDITION, name="Pro plan?")
    send = step_add(
        workflow=workflow, step_type="SEND_EMAIL", config={"templateId": str(template.id)}, name="Welcome pro"
    )
    wait = step_add(
        workflow=workflow,
        step_type="WAIT_FOR_EVENT",
        config={"eventName": "purchase", "timeout": 3 * 86400},
        name="Wait for a purchase",
        auto_connect=False,
    )
    done = step_add(workflow=workflow, step_type="EXIT", config={"reason": "Bought"}, name="Bought", auto_connect=False)
    transition_add(workflow=workflow, from_step_id=condition.id, to_step_id=send.id, branch="yes")
    transition_add(workflow=workflow, from_step_id=condition.id, to_step_id=wait.id, branch="no")
    transition_add(workflow=workflow, from_step_id=wait.id, to_step_id=done.id, wait_outcome="EVENT")
    workflow = workflow_update(workflow=workflow, enabled=True)
    for email, plan in (("ann@example.com", "pro"), ("bob@example.com", "free"), ("cy@example.com", "free")):
        contact = Contact.objects.create(project=project.project, email=email, data={"plan": plan})
        execution_start(workflow=workflow, contact=contact)  # run by the engine after the commit (eager tasks)
    assert sorted(WorkflowExecution.objects.values_list("status", flat=True)) == ["COMPLETED", "WAITING", "WAITING"]

    log_in_at(browser, f"/admin/workflows/workflow/{workflow.id}/change/")
    assert "3 in · 0 waiting · 3 done · 0 failed" in svg_texts(browser)
    assert "2 in · 2 waiting · 0 done · 0 failed" in svg_texts(browser)
    assert browser.page_problems("admin-workflow", min_font_px=12, min_tap_px=None) == []

    browser.follow("Add a step")
    choose_option(browser, "step_type", "DELAY")
    browser.fill("config", json.dumps({"amount": -1, "unit": "days"}))
    browser.press("Add the step")
    assert "amount: Must be greater than 0" in field_errors(browser, "config")
    assert browser.page_problems("admin-workflow-step-refused", min_font_px=12, min_tap_px=None) == []

    browser.open(f"/admin/workflows/workflow/{workflow.id}/transitions/add/")
    assert browser.page_problems("admin-workflow-transition", min_font_px=12, min_tap_px=None) == []
