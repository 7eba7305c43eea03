import pytest

from contacts.models import Contact

PRO = {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}


def campaign_body(**fields) -> dict:
    return {
        "name": "November news",
        "subject": "Hello {{ firstName | default: 'there' }}",
        "body": "<p>Hi {{ firstName }}</p>",
        "from": "news@alice.test",
        **fields,
    }


@pytest.fixture
def create_campaign(secret_client):
    """POST /campaigns with a valid body changed by `fields`; returns the campaign JSON (asserting 201)."""

    def create(**fields) -> dict:
        response = secret_client.post("/campaigns", campaign_body(**fields), format="json")
        assert response.status_code == 201, response.json()
        return response.json()["data"]

    return create


@pytest.fixture
def audience(project, other_project):
    """Contacts covering the base rule: two pro subscribers, one free subscriber, one unsubscribed pro, one snoozed
    pro, one suppressed pro, and another project's pro."""
    from django.utils import timezone

    from messaging.models import Suppression

    p = project.project
    rows = {
        "ann": Contact.objects.create(project=p, email="ann@example.test", data={"plan": "pro", "firstName": "Ann"}),
        "ben": Contact.objects.create(project=p, email="ben@example.test", data={"plan": "pro"}),
        "fay": Contact.objects.create(project=p, email="fay@example.test", data={"plan": "free"}),
        "uma": Contact.objects.create(project=p, email="uma@example.test", data={"plan": "pro"}, subscribed=False),
        "sam": Contact.objects.create(
            project=p,
            email="sam@example.test",
            data={"plan": "pro"},
            snoozed_until=timezone.now() + timezone.timedelta(days=7),
        ),
        "sue": Contact.objects.create(project=p, email="sue@example.test", data={"plan": "pro"}),
        "oli": Contact.objects.create(project=other_project.project, email="oli@example.test", data={"plan": "pro"}),
    }
    Suppression.objects.create(project=p, email="sue@example.test", reason=Suppression.Reason.BOUNCE)
    return rows


@pytest.fixture
def send(secret_client, committed):
    def post(campaign_id, body=None, client=secret_client):
        return committed(lambda: client.post(f"/campaigns/{campaign_id}/send", body or {}, format="json"))

    return post
