"""The workflow console in a real browser (config/tests/browser.py): an operator builds a branching workflow through
the admin's forms, each step in its type's typed fields, with JavaScript on (only the chosen type's fields shown)
and off (every type's, under its heading), enables it and reads its graph; the workflow page, with executions run
through the engine, and the graph's forms pass axe and the phone checks (screenshots with SCREENSHOT_DIR)."""

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


def fill_in(browser, fields: dict[str, str]) -> None:
    """Type in each field, or choose the option labelled so in a select."""
    for name, value in fields.items():
        if browser.driver.find_element("name", name).tag_name == "select":
            choose_option(browser, name, value)
        else:
            browser.fill(name, value)


def add_step(browser, step_type: str, name: str, fields: dict[str, str], *, connect: bool = True) -> None:
    browser.follow("Add a step")
    choose_option(browser, "step_type", step_type)
    browser.fill("name", name)
    fill_in(browser, fields)
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


def shown_step_types(browser) -> list[str]:
    groups = browser.driver.find_elements("css selector", "fieldset[data-step-type]")
    return [group.get_attribute("data-step-type") for group in groups if group.is_displayed()]


def test_an_operator_builds_a_branching_workflow_enables_it_and_sees_its_graph(
    any_browser, request, operator, project, template
):
    browser = any_browser
    javascript = request.node.callspec.params["any_browser"]
    log_in_at(browser, "/admin/workflows/workflow/add/")
    browser.fill("project", str(project.project.pk))
    browser.fill("name", "Onboarding")
    browser.fill("event_name", "signup")
    browser.press("Save and continue editing")
    assert "was added successfully" in browser.text
    workflow = Workflow.objects.get()
    assert (workflow.project_id, workflow.enabled) == (project.project.pk, False)

    # With JavaScript only the chosen type's fields show; without it, every type's, each under its heading.
    browser.follow("Add a step")
    choose_option(browser, "step_type", "CONDITION")
    every_type = ["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"]
    assert shown_step_types(browser) == (["CONDITION"] if javascript else every_type)
    # A value the service refuses is shown at its field, and nothing is added.
    browser.fill("name", "Pro plan?")
    fill_in(browser, {"condition_field": "data.plan", "condition_operator": "equals"})
    browser.press("Add the step")
    assert "Please correct the errors below." in browser.text
    assert "Required" in field_errors(browser, "condition_value")
    assert workflow.steps.count() == 1
    assert shown_step_types(browser) == (["CONDITION"] if javascript else every_type)
    browser.fill("condition_value", "pro")
    browser.press("Add the step")
    assert "The step was added." in browser.text

    add_step(
        browser,
        "SEND_EMAIL",
        "Welcome pro",
        {"email_template": "Welcome mail", "email_recipient": "The execution's contact"},
    )
    add_step(browser, "EXIT", "Not pro", {"exit_reason": "Free plan"}, connect=False)
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
    configs = {step.name: step.config for step in workflow.steps.all()}
    assert configs["Pro plan?"] == CONDITION
    assert configs["Welcome pro"] == {"templateId": str(template.id), "recipient": {"type": "CONTACT"}}
    assert configs["Not pro"] == {"reason": "Free plan"}


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
    fill_in(browser, {"delay_amount": "-1", "delay_unit": "days"})
    browser.press("Add the step")
    assert "Must be greater than 0" in field_errors(browser, "delay_amount")
    assert browser.page_problems("admin-workflow-step-refused", min_font_px=12, min_tap_px=None) == []

    # A step's change form, its typed fields filled in from its config.
    browser.open(f"/admin/workflows/workflow/{workflow.id}/steps/{wait.id}/change/")
    values = {name: browser.driver.find_element("name", name).get_attribute("value") for name in ("wait_event_name", "wait_timeout", "wait_timeout_unit")}  # fmt: skip
    assert values == {"wait_event_name": "purchase", "wait_timeout": "3", "wait_timeout_unit": "days"}
    assert browser.page_problems("admin-workflow-step-change", min_font_px=12, min_tap_px=None) == []

    browser.open(f"/admin/workflows/workflow/{workflow.id}/transitions/add/")
    assert browser.page_problems("admin-workflow-transition", min_font_px=12, min_tap_px=None) == []
