"""The console's composer: a campaign written, previewed, counted, tested, scheduled, sent and cancelled in the admin,
through the API's own services, for one project only."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from accounts.identity.users import user_get_or_create
from campaigns.models import Campaign
from campaigns.services import EDITABLE_FIELDS
from campaigns.tests.conftest import PRO
from conftest import PASSWORD
from contacts.models import Contact
from segments.models import Segment

ADD = "/admin/campaigns/campaign/add/"


def change(campaign_id, action: str = "") -> str:
    return f"/admin/campaigns/campaign/{campaign_id}/change/" if not action else (
        f"/admin/campaigns/campaign/{campaign_id}/{action}/"
    )  # fmt: skip


def composed(**fields) -> dict:
    """The composer's form as an operator fills it: the API's `campaign_body`, field for field."""
    return {
        "name": "November news",
        "description": "",
        "type": "MARKETING",
        "from_email": "news@alice.test",
        "from_name": "",
        "reply_to": "",
        "subject": "Hello {{ firstName | default: 'there' }}",
        "body": "<p>Hi {{ firstName }}</p>",
        "audience_type": "ALL",
        "segment": "",
        "audience_condition": "",
        **fields,
    }


def saved(campaign: Campaign) -> dict:
    return {name: getattr(campaign, name) for name in EDITABLE_FIELDS}


def form_errors(response) -> dict:
    form = response.context["adminform"].form
    return {field: list(errors) for field, errors in form.errors.items()}


@pytest.fixture
def pro_segment(project):
    return Segment.objects.create(project=project.project, name="Pro users", condition=PRO)


@pytest.mark.parametrize("audience", ["ALL", "SEGMENT", "FILTERED"])
def test_composing_creates_what_the_api_creates(admin_client, project, create_campaign, pro_segment, audience):
    api_fields = {"ALL": {}, "SEGMENT": {"segmentId": str(pro_segment.id)}, "FILTERED": {"audienceCondition": PRO}}
    form_fields = {
        "ALL": {},
        "SEGMENT": {"segment": str(pro_segment.id)},
        "FILTERED": {"audience_condition": json.dumps(PRO)},
    }
    extra = {"description": "For pros", "fromName": "Alice", "replyTo": "help@alice.test", "type": "TRANSACTIONAL"}
    through_api = Campaign.objects.get(pk=create_campaign(audienceType=audience, **api_fields[audience], **extra)["id"])

    response = admin_client.post(
        f"{ADD}?project={project.project.id}",
        composed(
            audience_type=audience,
            description="For pros",
            from_name="Alice",
            reply_to="help@alice.test",
            type="TRANSACTIONAL",
            **form_fields[audience],
        ),
    )

    assert response.status_code == 302, form_errors(response)
    through_console = Campaign.objects.exclude(pk=through_api.pk).get()
    assert through_console.project_id == through_api.project_id and through_console.status == "DRAFT"
    assert saved(through_console) == saved(through_api)


def test_the_add_page_asks_for_the_project_first(admin_client, project, other_project):
    page = admin_client.get(ADD).content.decode()
    assert "choose its project" in page and "Alice&#x27;s shop" in page and "Bob&#x27;s shop" in page
    for unknown in ("", "?project=not-an-id", f"?project={other_project.project.id}x"):
        refused = admin_client.post(f"{ADD}{unknown}", composed())
        assert refused.status_code == 200 and "choose its project" in refused.content.decode()
    assert not Campaign.objects.exists()
    composer = admin_client.get(f"{ADD}?project={project.project.id}").content.decode()
    assert 'name="subject"' in composer and "alice.test" in composer


@pytest.mark.parametrize(
    "fields, field, message",
    [
        (
            {"from_email": "news@unverified.test"},
            "from_email",
            'Domain "unverified.test" is not verified for this project',
        ),
        ({"body": "<p>Hi</p>\n{% if firstName %}"}, "body", "at line 2, column"),
        ({"subject": "Hi\nthere"}, "subject", ""),
        ({"audience_type": "SEGMENT"}, "segment", "Required when audienceType is SEGMENT"),
        (
            {"audience_type": "FILTERED", "audience_condition": '{"logic": "AND", "groups": []}'},
            "audience_condition",
            "groups",
        ),
        ({"reply_to": "not an address"}, "reply_to", "valid email"),
    ],
)
def test_a_refusal_is_shown_at_its_field(admin_client, project, fields, field, message):
    response = admin_client.post(f"{ADD}?project={project.project.id}", composed(**fields))
    assert response.status_code == 200
    errors = form_errors(response)
    assert list(errors) == [field] and message in " ".join(errors[field])
    assert not Campaign.objects.exists()


def test_another_projects_segments_and_senders_are_not_offered(admin_client, project, other_project):
    Segment.objects.create(project=project.project, name="Alice's pros", condition=PRO)
    theirs = Segment.objects.create(project=other_project.project, name="Bob's pros", condition=PRO)
    page = admin_client.get(f"{ADD}?project={project.project.id}").content.decode()
    assert "Alice&#x27;s pros" in page and "Bob&#x27;s pros" not in page and "bob.test" not in page

    response = admin_client.post(
        f"{ADD}?project={project.project.id}",
        composed(audience_type="SEGMENT", segment=str(theirs.id), from_email="news@bob.test"),
    )
    errors = form_errors(response)
    assert set(errors) == {"segment"} and "Select a valid choice" in errors["segment"][0]
    assert not Campaign.objects.exists()


def test_editing_a_draft_goes_through_the_service(admin_client, create_campaign):
    campaign = create_campaign()
    page = admin_client.get(change(campaign["id"])).content.decode()
    assert 'name="subject"' in page and "Hello there" in page  # the saved content, rendered

    response = admin_client.post(change(campaign["id"]), composed(name="December news", subject="Ho {{ x }}"))
    assert response.status_code == 302, form_errors(response)
    row = Campaign.objects.get(pk=campaign["id"])
    assert (row.name, row.subject) == ("December news", "Ho {{ x }}")

    refused = admin_client.post(change(campaign["id"]), composed(from_email="news@elsewhere.test"))
    assert "from_email" in form_errors(refused)
    assert Campaign.objects.get(pk=campaign["id"]).from_email == "news@alice.test"


@pytest.mark.parametrize("status", ["SENDING", "SENT", "CANCELLED"])
def test_a_campaign_no_longer_a_plan_cannot_be_changed(admin_client, create_campaign, status):
    campaign = create_campaign()
    Campaign.objects.filter(pk=campaign["id"]).update(status=status)
    page = admin_client.get(change(campaign["id"])).content.decode()
    assert 'name="subject"' not in page and "Hello there" in page  # read-only, with the rendered message
    assert ("Cancel the campaign" in page) is (status == "SENDING") and "Send now" not in page
    assert admin_client.post(change(campaign["id"]), composed(name="Changed")).status_code == 403
    assert Campaign.objects.get(pk=campaign["id"]).name == "November news"


def test_preview_renders_the_chosen_contacts_variables(admin_client, project, other_project):
    ann = Contact.objects.create(project=project.project, email="ann@example.test", data={"firstName": "Ann"})
    Contact.objects.create(project=other_project.project, email="oli@example.test", data={"firstName": "Oli"})
    url = f"/admin/campaigns/campaign/preview/{project.project.id}/"

    def preview(**fields) -> dict:
        response = admin_client.post(url, composed(**fields), HTTP_ACCEPT="application/json")
        assert response.status_code == 200
        return response.json()

    for lookup in ("Ann@Example.test", str(ann.id)):
        answer = preview(preview_contact=lookup, body="<p>Hi {{ firstName }}, {{ email }}</p>")
        assert answer["subject"] == "Hello Ann" and answer["errors"] == []
        assert answer["html"] == "<p>Hi Ann, ann@example.test</p>"

    assert preview()["subject"] == "Hello there"  # no contact: a recipient with no data
    theirs = preview(preview_contact="oli@example.test")
    assert "Oli" not in theirs["subject"] and theirs["errors"][0]["field"] == "preview_contact"

    broken = preview(body="<p>Hi</p>\n<p>{% if firstName %}</p>", preview_contact="ann@example.test")
    [error] = broken["errors"]
    assert error["field"] == "body" and "line 2, column" in error["message"]

    # The Preview button without the script: a page of its own, with the count.
    page = admin_client.post(url, composed(preview_contact="ann@example.test")).content.decode()
    assert "Hello Ann" in page and "Recipients now: <strong>1</strong>" in page


def test_the_count_is_the_apis(admin_client, project, secret_client, create_campaign, audience, pro_segment):
    url = f"/admin/campaigns/campaign/recipients/{project.project.id}/"
    cases = [
        ({}, {}),
        ({"audienceType": "FILTERED", "audienceCondition": PRO}, {"audience_type": "FILTERED", "audience_condition": json.dumps(PRO)}),
        ({"audienceType": "SEGMENT", "segmentId": str(pro_segment.id)}, {"audience_type": "SEGMENT", "segment": str(pro_segment.id)}),
        ({"type": "TRANSACTIONAL"}, {"type": "TRANSACTIONAL"}),
    ]  # fmt: skip
    counts = set()
    for api, form in cases:
        expected = secret_client.get(f"/campaigns/{create_campaign(**api)['id']}").json()["data"]["totalRecipients"]
        answer = admin_client.post(url, composed(**form), HTTP_ACCEPT="application/json").json()
        assert answer == {"recipients": expected, "errors": []}
        counts.add(expected)
    assert counts == {3, 2, 5}  # another project's contact is in none of them

    bad = admin_client.post(
        url, composed(audience_type="FILTERED", audience_condition="{"), HTTP_ACCEPT="application/json"
    )
    assert bad.json()["recipients"] is None and bad.json()["errors"][0]["field"] == "audience_condition"


def test_the_composer_offers_only_the_projects_members_for_a_test(admin_client, create_campaign, other_project):
    page = admin_client.get(change(create_campaign()["id"])).content.decode()
    assert "<option>alice@example.test</option>" in page and "bob@example.test" not in page


def test_test_send_reaches_the_mailbox(admin_client, project, create_campaign, smtp_sink, committed):
    campaign = create_campaign()
    Contact.objects.create(project=project.project, email="alice@example.test", data={"firstName": "Alice"})
    refused = admin_client.post(change(campaign["id"], "test"), {"email": "stranger@example.test"}, follow=True)
    assert "Test emails can only be sent to project members" in refused.content.decode()
    assert smtp_sink.received == []

    response = committed(
        lambda: admin_client.post(change(campaign["id"], "test"), {"email": "alice@example.test"}, follow=True)
    )
    assert "Test email sent to alice@example.test" in response.content.decode()
    [received] = smtp_sink.received
    assert received.message["Subject"] == "[TEST] Hello Alice" and "Hi Alice" in received.html


def test_schedule_send_and_cancel_change_the_status(admin_client, create_campaign, audience, committed):
    campaign = create_campaign()
    when = (timezone.now() + timezone.timedelta(days=2)).replace(second=0, microsecond=0)
    response = admin_client.post(
        change(campaign["id"], "send"), {"scheduled_for": when.strftime("%Y-%m-%dT%H:%M"), "_schedule": ""}, follow=True
    )
    assert "Campaign scheduled for" in response.content.decode()
    row = Campaign.objects.get(pk=campaign["id"])
    assert (row.status, row.scheduled_for) == ("SCHEDULED", when)

    past = admin_client.post(
        change(campaign["id"], "send"), {"scheduled_for": "2020-01-01T09:00", "_schedule": ""}, follow=True
    )
    assert "scheduledFor: Must be in the future" in past.content.decode()

    cancelled = admin_client.post(change(campaign["id"], "cancel"), follow=True)
    assert "Campaign cancelled: it is DRAFT" in cancelled.content.decode()
    assert Campaign.objects.get(pk=campaign["id"]).status == "DRAFT"

    committed(lambda: admin_client.post(change(campaign["id"], "send"), {"_send_now": ""}))
    assert Campaign.objects.get(pk=campaign["id"]).status in ("SENDING", "SENT")


def test_a_send_refused_by_the_service_says_why(admin_client, create_campaign):
    campaign = create_campaign()  # the project has no contact
    response = admin_client.post(change(campaign["id"], "send"), {"_send_now": ""}, follow=True)
    assert "audienceType: Campaign has no recipients" in response.content.decode()
    assert Campaign.objects.get(pk=campaign["id"]).status == "DRAFT"


def test_a_staff_user_without_the_change_permission_is_refused(project, create_campaign, audience):
    campaign = create_campaign()
    user, _ = user_get_or_create(email="viewer@example.test", password=PASSWORD)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(user)
    preview = f"/admin/campaigns/campaign/preview/{project.project.id}/"
    recipients = f"/admin/campaigns/campaign/recipients/{project.project.id}/"
    for url in (preview, recipients):  # a staff user who may not see campaigns sees no contact's data through them
        assert client.post(url, composed(preview_contact="ann@example.test")).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_campaign"))
    client.force_login(user)
    assert client.get(preview).status_code == 405
    assert "Hello Ann" in client.post(preview, composed(preview_contact="ann@example.test")).content.decode()

    page = client.get(change(campaign["id"])).content.decode()
    assert 'name="subject"' not in page and "Test, schedule, send" not in page
    assert client.get(f"{ADD}?project={project.project.id}").status_code == 403
    assert client.post(change(campaign["id"]), composed(name="Changed")).status_code == 403
    for action in ("send", "test", "cancel"):
        assert client.post(change(campaign["id"], action), {"email": project.owner_email}).status_code == 403
    row = Campaign.objects.get(pk=campaign["id"])
    assert (row.name, row.status) == ("November news", "DRAFT")


def test_deleting_in_the_admin_follows_the_apis_rule(admin_client, create_campaign):
    """A draft is deleted through the service; a scheduled one offers no delete, and "Delete selected" names it as
    one it may not delete, as the API's 409 does, until it is cancelled."""
    draft = create_campaign(name="Draft")
    planned = create_campaign(name="Planned")
    Campaign.objects.filter(pk=planned["id"]).update(status="SCHEDULED", scheduled_for=timezone.now())

    assert admin_client.get(f"/admin/campaigns/campaign/{planned['id']}/delete/").status_code == 403
    listing = "/admin/campaigns/campaign/"
    both = {"action": "delete_selected", "_selected_action": [draft["id"], planned["id"]]}
    confirm = admin_client.post(listing, both).content.decode()
    assert "Cannot delete campaigns" in confirm and "permission to delete the following types of objects" in confirm
    assert admin_client.post(listing, {**both, "post": "yes"}).status_code == 403
    assert Campaign.objects.count() == 2

    answer = admin_client.post(listing, {"action": "delete_selected", "_selected_action": [draft["id"]], "post": "yes"})
    assert answer.status_code == 302
    assert list(Campaign.objects.values_list("name", flat=True)) == ["Planned"]
