"""The segment builder of the admin through Django's test client: add and change go through the API's services (its
validation and errors shown at the field), the live count answers what the API's segment count answers and never
shows another project's contacts, and both need the segment permissions."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.models import User
from contacts.models import Contact, Event
from segments.models import Segment

ADD, LIST = "/admin/segments/segment/add/", "/admin/segments/segment/"
PREVIEW, FIELDS = "/admin/segments/segment/condition/preview/", "/admin/segments/segment/condition/fields/"

# (pro AND (bought OR vip)) OR email contains "@big.": a nested group, an event and data filters.
NESTED = {
    "logic": "OR",
    "groups": [
        {
            "filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}],
            "conditions": {
                "logic": "OR",
                "groups": [
                    {
                        "filters": [
                            {"field": "event.purchase", "operator": "triggeredWithin", "value": 7, "unit": "days"}
                        ]
                    },
                    {"filters": [{"field": "data.vip", "operator": "equals", "value": True}]},
                ],
            },
        },
        {"filters": [{"field": "email", "operator": "contains", "value": "@big."}]},
    ],
}
MISSING = "0d3c9f4e-0000-4000-8000-000000000000"
BAD_OPERATOR = {
    "logic": "AND",
    "groups": [{"filters": [{"field": "subscribed", "operator": "contains", "value": "x"}]}],
}


@pytest.fixture
def shop(project, other_project):
    """Alice's contacts: ann (pro, bought), bob (pro, vip), cat (pro only), dan@big.test, eve (nothing); Bob's
    project has the same addresses and data, all of which would match."""
    people = {
        "ann": {"plan": "pro"},
        "bob": {"plan": "pro", "vip": True},
        "cat": {"plan": "pro"},
        "dan": {},
        "eve": {"plan": "free"},
    }
    made = {}
    for name, data in people.items():
        email = f"{name}@big.test" if name == "dan" else f"{name}@example.test"
        made[name] = Contact.objects.create(project=project.project, email=email, data=data)
        other = Contact.objects.create(project=other_project.project, email=email, data={"plan": "pro", "vip": True})
        Event.objects.create(project=other_project.project, contact=other, name="purchase")
    Event.objects.create(project=project.project, contact=made["ann"], name="purchase")
    return made


def member_of(segment_id) -> dict:
    return {
        "logic": "AND",
        "groups": [{"filters": [{"field": f"segment.{segment_id}", "operator": "memberOfSegment"}]}],
    }


def staff_client(*permissions: str) -> Client:
    user = User.objects.create_user(email="staff@example.test", password="staff password", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=permissions, content_type__app_label="segments"))
    client = Client()
    client.force_login(user)
    return client


def add_form(project, **fields) -> dict:
    return {
        "project": str(project.id),
        "name": "Engaged",
        "description": "",
        "type": "DYNAMIC",
        "condition": json.dumps(NESTED),
        "track_membership": "",
        **fields,
    }


def preview(client, project, condition, **extra):
    body = {"project": str(project.id), "condition": condition, **extra}
    return client.post(PREVIEW, json.dumps(body), content_type="application/json")


def test_a_dynamic_segment_added_in_the_admin_has_the_members_the_api_counts(
    admin_client, secret_client, project, shop
):
    response = admin_client.post(ADD, add_form(project, track_membership="on"))

    assert response.status_code == 302, response.content.decode()
    segment = Segment.objects.get(project=project.project, name="Engaged")
    assert segment.condition == NESTED and segment.track_membership and segment.type == "DYNAMIC"
    assert segment.member_count == 3  # ann, bob, dan: never Bob's project's contacts
    api = secret_client.get(f"/segments/{segment.id}").json()
    assert api["memberCount"] == 3


def test_a_static_segment_is_added_without_a_condition(admin_client, project):
    response = admin_client.post(ADD, add_form(project, type="STATIC", condition="", name="VIP"))

    assert response.status_code == 302
    segment = Segment.objects.get(name="VIP")
    assert segment.type == "STATIC" and segment.condition is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"condition": json.dumps(BAD_OPERATOR)}, 'groups.0.filters.0.operator: Operator "contains" is not valid'),
        ({"condition": "{not json"}, "Enter a valid JSON."),
        ({"condition": "42"}, "Expected an object {logic, groups}."),
        ({"condition": "[]"}, "Expected an object {logic, groups}"),
        ({"condition": ""}, "Expected an object {logic, groups}"),
        ({"type": "STATIC"}, "A STATIC segment has no condition; omit it or send null"),
        ({"condition": json.dumps(member_of(MISSING))}, "groups.0.filters.0.field: Unknown segment"),
    ],
)  # fmt: skip
def test_an_add_the_service_refuses_shows_its_error_at_the_condition(admin_client, project, fields, message):
    response = admin_client.post(ADD, add_form(project, **fields))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["condition"] and message in errors["condition"][0], errors
    assert not Segment.objects.exists()


def test_another_projects_segment_is_unknown_to_a_condition(admin_client, project, other_project):
    theirs = Segment.objects.create(project=other_project.project, name="Theirs", type="STATIC")

    response = admin_client.post(ADD, add_form(project, condition=json.dumps(member_of(theirs.id))))

    assert "Unknown segment" in response.context["adminform"].form.errors["condition"][0]
    assert Segment.objects.filter(project=project.project).count() == 0


def test_changing_the_condition_goes_through_segment_update(admin_client, project, shop):
    admin_client.post(ADD, add_form(project))
    segment = Segment.objects.get(name="Engaged")
    change = f"/admin/segments/segment/{segment.id}/change/"
    page = admin_client.get(change).content.decode()
    assert 'class="condition-builder"' in page and "segments/condition-builder.js" in page

    pro_only = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}
    form = {"name": "Pro", "description": "Paying", "condition": json.dumps(pro_only), "track_membership": ""}
    assert admin_client.post(change, form).status_code == 302

    segment.refresh_from_db()
    assert (segment.name, segment.description, segment.condition, segment.member_count) == (
        "Pro",
        "Paying",
        pro_only,
        3,
    )

    # A cycle through the segment itself is refused at the field, and nothing changes.
    other = Segment.objects.create(project=project.project, name="Uses Pro", condition=member_of(segment.id))
    response = admin_client.post(change, {**form, "condition": json.dumps(member_of(other.id))})
    (message,) = response.context["adminform"].form.errors["condition"]
    assert message.startswith("groups.0.filters.0.field: Segment references may not form a cycle")
    segment.refresh_from_db()
    assert segment.condition == pro_only


def test_a_static_segments_change_page_has_no_condition(admin_client, project):
    segment = Segment.objects.create(project=project.project, name="VIP", type="STATIC")
    change = f"/admin/segments/segment/{segment.id}/change/"

    assert 'class="condition-builder"' not in admin_client.get(change).content.decode()
    # A page shown again with an error (here the members inline's) has changed nothing.
    assert admin_client.post(change, {"name": "VIPs", "description": "", "track_membership": ""}).status_code == 200
    segment.refresh_from_db()
    assert segment.name == "VIP"

    inline = {"memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}
    response = admin_client.post(change, {"name": "VIPs", "description": "", "track_membership": "", **inline})
    assert response.status_code == 302
    segment.refresh_from_db()
    assert segment.name == "VIPs" and segment.condition is None


def test_the_preview_counts_what_the_api_counts_and_samples_this_project_only(
    admin_client, secret_client, project, shop
):
    response = preview(admin_client, project, NESTED)

    assert response.status_code == 200
    body = response.json()
    created = secret_client.post("/segments", {"name": "Same tree", "condition": NESTED}, format="json").json()
    members = secret_client.get(f"/segments/{created['id']}/contacts").json()
    assert body["count"] == created["memberCount"] == 3
    assert sorted(body["sample"], key=lambda c: c["email"]) == sorted(
        ({"id": c["id"], "email": c["email"]} for c in members["data"]), key=lambda c: c["email"]
    )
    ids = {c["id"] for c in body["sample"]}
    assert ids == {str(shop[name].id) for name in ("ann", "bob", "dan")}


def test_the_preview_sample_is_the_ten_newest(admin_client, project):
    for index in range(12):
        Contact.objects.create(project=project.project, email=f"p{index:02}@example.test")
    body = preview(admin_client, project, {"logic": "AND", "groups": [{"filters": [{"field": "email", "operator": "contains", "value": "@"}]}]}).json()  # fmt: skip

    assert body["count"] == 12
    assert [c["email"] for c in body["sample"]] == [f"p{index:02}@example.test" for index in range(11, 1, -1)]


def test_an_invalid_tree_answers_the_validation_errors_at_their_paths(admin_client, project):
    response = preview(admin_client, project, BAD_OPERATOR)

    assert response.status_code == 422
    (error,) = response.json()["errors"]
    assert error["field"] == "condition.groups.0.filters.0.operator"
    assert error["message"].startswith('Operator "contains" is not valid for field "subscribed"')


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"project": "not-a-uuid", "condition": NESTED}, 400, "project"),
        ({"project": MISSING, "condition": NESTED}, 400, "project"),
        ({"condition": NESTED}, 400, "project"),
        ([1, 2], 400, ""),
    ],
)
def test_the_preview_refuses_what_names_no_project(admin_client, body, status, field):
    response = admin_client.post(PREVIEW, json.dumps(body), content_type="application/json")

    assert response.status_code == status
    assert response.json()["errors"][0]["field"] == field


def test_the_fields_offered_are_the_projects(admin_client, project, other_project, shop):
    Segment.objects.create(project=project.project, name="VIP", type="STATIC")
    Segment.objects.create(project=other_project.project, name="Bob's VIP", type="STATIC")
    Event.objects.create(project=other_project.project, contact=Contact.objects.filter(project=other_project.project).first(), name="bobs.event")  # fmt: skip

    fields = admin_client.get(FIELDS, {"project": str(project.id)}).json()["fields"]

    names = [f["field"] for f in fields]
    assert {"email", "subscribed", "createdAt", "data.plan", "data.vip", "event.purchase", "email.opened"} <= set(names)
    assert "event.bobs.event" not in names
    assert [f["label"] for f in fields if f["group"] == "Segments"] == ["segment: VIP"]


def test_staff_without_the_segment_permissions_are_refused(project, shop):
    client = staff_client()

    assert client.get(ADD).status_code == 403
    assert preview(client, project, NESTED).status_code == 403
    assert client.get(FIELDS, {"project": str(project.id)}).status_code == 403
    assert client.post(ADD, add_form(project)).status_code == 403
    assert not Segment.objects.exists()


def test_view_permission_previews_but_does_not_add(project, shop):
    client = staff_client("view_segment")

    assert preview(client, project, NESTED).json()["count"] == 3
    assert client.post(ADD, add_form(project)).status_code == 403
    assert not Segment.objects.exists()


def test_anonymous_visitors_are_sent_to_log_in(client, project):
    response = preview(client, project, NESTED)

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
