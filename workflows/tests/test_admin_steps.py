"""The console's typed step fields: each step type typed in its fields is stored as the API stores the same config;
the change form is filled in from the stored config, so that saving it as shown changes nothing; only the
project's own templates are offered or taken; without JavaScript every type's fields are shown and only the chosen
type's are read."""

import re
from html.parser import HTMLParser

import pytest

from messaging.models import Template
from workflows.models import WorkflowStep

pytestmark = pytest.mark.django_db

TEMPLATE = "{template}"

# (the step type, what the operator types in its fields, the config the API is sent for the same step)
TYPED = [
    ("SEND_EMAIL", {"email_template": TEMPLATE, "email_recipient": "CONTACT"}, {"templateId": TEMPLATE}),
    (
        "SEND_EMAIL",
        {"email_template": TEMPLATE, "email_recipient": "CUSTOM", "email_address": " Boss@Example.com"},
        {"templateId": TEMPLATE, "recipient": {"type": "CUSTOM", "email": " Boss@Example.com"}},
    ),
    ("DELAY", {"delay_amount": "1.5", "delay_unit": "hours"}, {"amount": 1.5, "unit": "hours"}),
    ("DELAY", {"delay_amount": "2", "delay_unit": "days"}, {"amount": 2, "unit": "days"}),
    (
        "WAIT_FOR_EVENT",
        {"wait_event_name": "purchase", "wait_timeout": "3", "wait_timeout_unit": "days"},
        {"eventName": "purchase", "timeout": 3 * 86400},
    ),
    (
        "WAIT_FOR_EVENT",
        {"wait_event_name": "purchase", "wait_timeout": "90", "wait_timeout_unit": "seconds"},
        {"eventName": "purchase", "timeout": 90},
    ),
    ("WAIT_FOR_EVENT", {"wait_event_name": "purchase", "wait_timeout_unit": "days"}, {"eventName": "purchase"}),
    (
        "CONDITION",
        {"condition_field": "data.plan", "condition_operator": "equals", "condition_value": "pro"},
        {"field": "data.plan", "operator": "equals", "value": "pro"},
    ),
    (
        "CONDITION",
        {"condition_field": "data.age", "condition_operator": "greaterThan", "condition_value": "30.5"},
        {"field": "data.age", "operator": "greaterThan", "value": 30.5},
    ),
    (
        "CONDITION",
        {"condition_field": "data.code", "condition_operator": "equals", "condition_value": "42", "condition_value_text": "on"},
        {"field": "data.code", "operator": "equals", "value": "42"},
    ),
    (
        "CONDITION",
        {"condition_field": "subscribed", "condition_operator": "equals", "condition_value": "false"},
        {"field": "subscribed", "operator": "equals", "value": False},
    ),
    (
        "CONDITION",
        {"condition_field": "event.purchase", "condition_operator": "triggeredWithin", "condition_value": "7", "condition_unit": "days"},
        {"field": "event.purchase", "operator": "triggeredWithin", "value": 7, "unit": "days"},
    ),
    (
        "CONDITION",
        {"condition_field": "context.order.total", "condition_operator": "greaterThan", "condition_value": "100"},
        {"field": "context.order.total", "operator": "greaterThan", "value": 100},
    ),
    ("CONDITION", {"condition_field": "data.plan", "condition_operator": "exists"}, {"field": "data.plan", "operator": "exists"}),
    ("WEBHOOK", {"webhook_url": "https://example.com/hook", "webhook_method": "POST"}, {"url": "https://example.com/hook"}),
    (
        "WEBHOOK",
        {
            "webhook_url": "https://example.com/{{ contact.email }}",
            "webhook_method": "PUT",
            "webhook_headers": "X-Token: s3cret: yes\r\n\r\nAccept:application/json",
            "webhook_body": '{"email": "{{ contact.email }}", "tags": ["a", 1]}',
        },
        {
            "url": "https://example.com/{{ contact.email }}",
            "method": "PUT",
            "headers": {"X-Token": "s3cret: yes", "Accept": "application/json"},
            "body": {"email": "{{ contact.email }}", "tags": ["a", 1]},
        },
    ),
    (
        "UPDATE_CONTACT",
        {"update_data": '{"plan": "pro", "trial": null}', "update_subscription": "subscribe"},
        {"updates": {"plan": "pro", "trial": None}, "subscriptionAction": "subscribe"},
    ),
    ("UPDATE_CONTACT", {"update_data": "", "update_subscription": "unsubscribe"}, {"subscriptionAction": "unsubscribe"}),
    ("EXIT", {"exit_reason": "Converted"}, {"reason": "Converted"}),
    ("EXIT", {"exit_reason": ""}, {}),
]  # fmt: skip


def filled(values, template: Template):
    """`values` with TEMPLATE standing for the template's id, at any depth."""
    if isinstance(values, dict):
        return {key: filled(value, template) for key, value in values.items()}
    return str(template.id) if values == TEMPLATE else values


class FormValues(HTMLParser):
    """What a browser would post for the page's form as rendered: each input's value (a checkbox when checked), each
    select's selected option, each textarea's text."""

    def __init__(self):
        super().__init__()
        self.values: dict[str, str] = {}
        self._select = self._textarea = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        name = attrs.get("name")
        if tag == "input" and name and attrs.get("type") not in ("submit", "hidden"):
            if attrs.get("type") != "checkbox" or "checked" in attrs:
                self.values[name] = attrs.get("value") or ("on" if attrs.get("type") == "checkbox" else "")
        elif tag == "select":
            self._select = name
            self.values[name] = ""
        elif tag == "option" and self._select and "selected" in attrs:
            self.values[self._select] = attrs.get("value", "")
        elif tag == "textarea":
            self._textarea = name
            self.values[name] = ""

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None

    def handle_data(self, data):
        if self._textarea:
            self.values[self._textarea] += data.removeprefix("\n") if not self.values[self._textarea] else data


def rendered_form(html: str) -> dict[str, str]:
    parser = FormValues()
    parser.feed(re.search(r'<form method="post" class="workflow-graph-form".*?</form>', html, re.S).group(0))
    return parser.values


def add_url(workflow: dict) -> str:
    return f"/admin/workflows/workflow/{workflow['id']}/steps/add/"


@pytest.mark.parametrize(("step_type", "typed", "config"), TYPED)
def test_a_step_typed_in_its_fields_is_stored_as_the_api_stores_its_config_and_edits_back_unchanged(
    admin_client, api, template, step_type, typed, config
):
    by_admin, by_api = api.workflow(name="By admin"), api.workflow(name="By API")
    data = {"step_type": step_type, "name": "Step", **filled(typed, template)}
    response = admin_client.post(add_url(by_admin), data)
    assert response.status_code == 302, response.context["form"].errors
    stored = WorkflowStep.objects.get(workflow_id=by_admin["id"], name="Step")
    assert stored.config == api.step(by_api, step_type, filled(config, template), name="Step")["config"]

    # The change form shows the step's config in its typed fields: posted back as shown, it is the same config.
    change = f"/admin/workflows/workflow/{by_admin['id']}/steps/{stored.id}/change/"
    shown = rendered_form(admin_client.get(change).content.decode())
    assert shown.keys() >= typed.keys() - {"condition_value_text"}
    response = admin_client.post(change, {**shown, "name": "Renamed"})
    assert response.status_code == 302, response.context["form"].errors
    again = WorkflowStep.objects.get(id=stored.id)
    assert (again.name, again.config) == ("Renamed", stored.config)


def test_a_changed_typed_field_changes_only_its_key(admin_client, api, template):
    workflow = api.workflow()
    step = api.step(workflow, "WAIT_FOR_EVENT", {"eventName": "purchase", "timeout": 7200}, name="Wait")
    change = f"/admin/workflows/workflow/{workflow['id']}/steps/{step['id']}/change/"
    shown = rendered_form(admin_client.get(change).content.decode())
    assert (shown["wait_event_name"], shown["wait_timeout"], shown["wait_timeout_unit"]) == ("purchase", "2", "hours")
    admin_client.post(change, {**shown, "wait_timeout_unit": "days"})
    assert WorkflowStep.objects.get(id=step["id"]).config == {"eventName": "purchase", "timeout": 2 * 86400}


def test_only_the_projects_own_templates_are_offered_and_taken(admin_client, api, template, other_project):
    theirs = Template.objects.create(
        project=other_project.project, name="Bob's secret mail", subject="Hi", body="Hi", from_email="b@bob.test"
    )
    workflow = api.workflow()
    page = admin_client.get(add_url(workflow)).content.decode()
    assert f'<option value="{template.id}">Welcome mail</option>' in page
    assert "Bob's secret mail" not in page and str(theirs.id) not in page

    response = admin_client.post(add_url(workflow), {"step_type": "SEND_EMAIL", "email_template": str(theirs.id)})
    assert response.status_code == 200
    assert response.context["form"].errors["email_template"] == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    assert not WorkflowStep.objects.filter(workflow_id=workflow["id"], type="SEND_EMAIL").exists()


def test_without_javascript_every_types_fields_are_shown_and_only_the_chosen_types_are_read(admin_client, api):
    workflow = api.workflow()
    page = admin_client.get(add_url(workflow)).content.decode()
    headings = re.findall(
        r'<fieldset class="module aligned" data-step-type="(\w+)".*?<h2[^>]*>([^<]+)</h2>', page, re.S
    )
    assert [step_type for step_type, _ in headings] == [
        "SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT",
    ]  # fmt: skip
    assert ("DELAY", "Wait for a while (DELAY)") in headings

    # A page posts every type's fields: what another type's hold, even what it could not parse, is ignored.
    shown = rendered_form(page)
    data = {**shown, "step_type": "DELAY", "delay_amount": "3", "webhook_body": "{not json", "wait_timeout": "x"}
    response = admin_client.post(add_url(workflow), data)
    assert response.status_code == 302, response.context["form"].errors
    assert WorkflowStep.objects.get(workflow_id=workflow["id"], type="DELAY").config == {"amount": 3, "unit": "days"}

    # Refused, the page shows again what was typed in every type's fields.
    data = {**data, "delay_amount": "-3"}
    again = rendered_form(admin_client.post(add_url(workflow), data).content.decode())
    assert (again["delay_amount"], again["webhook_body"], again["wait_timeout"]) == ("-3", "{not json", "x")
