import pytest

from config.tests.openapi import assert_documented
from core.usage import usage_finders
from messaging.models import Template

pytestmark = pytest.mark.django_db

VALID = {
    "name": "Welcome",
    "description": "first mail",
    "subject": "Hi {{ name }}",
    "body": "<p>Hello {{ name ?? 'friend' }}</p>",
    "from": "hello@alice.test",
    "fromName": "Alice",
    "replyTo": "support@alice.test",
    "type": "TRANSACTIONAL",
}


def create(client, **overrides):
    response = client.post("/templates", {**VALID, **overrides}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_get_update_delete(secret_client, project):
    created = create(secret_client)
    assert set(created) == {
        "id",
        "name",
        "description",
        "subject",
        "body",
        "from",
        "fromName",
        "replyTo",
        "type",
        "projectId",
        "createdAt",
        "updatedAt",
    }
    assert created["projectId"] == str(project.id)
    assert secret_client.get(f"/templates/{created['id']}").json() == created
    updated = secret_client.patch(f"/templates/{created['id']}", {"subject": "New {{ plan }}"}, format="json")
    assert updated.status_code == 200
    assert updated.json()["subject"] == "New {{ plan }}"
    assert updated.json()["name"] == "Welcome"
    assert secret_client.delete(f"/templates/{created['id']}").status_code == 204
    assert secret_client.get(f"/templates/{created['id']}").status_code == 404


def test_type_defaults_to_marketing(secret_client):
    body = {key: value for key, value in VALID.items() if key != "type"}
    assert secret_client.post("/templates", body, format="json").json()["type"] == "MARKETING"


def test_missing_from_is_a_bare_400(secret_client):
    body = {key: value for key, value in VALID.items() if key != "from"}
    response = secret_client.post("/templates", body, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    assert not Template.objects.exists()


@pytest.mark.parametrize("method", ["post", "patch"])
def test_a_sender_on_an_unverified_domain_is_403(secret_client, method):
    if method == "post":
        response = secret_client.post("/templates", {**VALID, "from": "x@bob.test"}, format="json")
    else:
        template = create(secret_client)
        response = secret_client.patch(f"/templates/{template['id']}", {"from": "x@unknown.test"}, format="json")
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "DOMAIN_NOT_VERIFIED"
    assert "bob.test" in error["message"] or "unknown.test" in error["message"]


def test_a_subdomain_of_a_verified_domain_may_send(secret_client):
    assert create(secret_client, **{"from": "news@mail.alice.test"})["from"] == "news@mail.alice.test"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"body": "{% if %}"}, "body"),
        ({"subject": "{{ name "}, "subject"),
        ({"subject": "two\nlines"}, "subject"),
        ({"subject": "x" * 999}, "subject"),
        ({"body": "x" * (2 * 1024 * 1024 + 1)}, "body"),
        ({"body": "é" * (1024 * 1024 + 1)}, "body"),  # 2 MB and 2 bytes of UTF-8
        ({"type": "NEWSLETTER"}, "type"),
        ({"replyTo": "not-an-email"}, "replyTo"),
        ({"replyTo": "support@alice.test\r\nBcc: evil@x.test"}, "replyTo"),
        ({"fromName": "Alice\r\nBcc: evil@x.test"}, "fromName"),
        ({"fromName": "Alice\nBcc: evil@x.test"}, "fromName"),
        ({"fromName": "Alice\x00"}, "fromName"),
        ({"from": "not-an-email"}, "from"),
        ({"name": 5}, "name"),
        ({"body": "{% for i in (1..10001) %}x{% endfor %}"}, "body"),
        (
            {
                "subject": '{% assign s = "0123456789abcdef" %}{% for i in (1..20) %}{% assign s = s | append: s %}{% endfor %}'
            },
            "subject",
        ),
    ],
)
def test_invalid_templates_are_422_and_not_saved(secret_client, overrides, field):
    response = secret_client.post("/templates", {**VALID, **overrides}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == field
    assert not Template.objects.exists()


def test_list_page_envelope_search_type_and_sort(secret_client):
    for name, kind in [("Alpha", "MARKETING"), ("Beta", "TRANSACTIONAL"), ("Gamma", "MARKETING")]:
        create(secret_client, name=name, type=kind, description=f"about {name.lower()}")
    body = secret_client.get("/templates", {"pageSize": 2}).json()
    assert list(body) == ["data", "total", "page", "pageSize", "totalPages"]
    assert (body["total"], body["page"], body["pageSize"], body["totalPages"]) == (3, 1, 2, 2)
    assert [t["name"] for t in body["data"]] == ["Gamma", "Beta"]
    names = lambda **q: [t["name"] for t in secret_client.get("/templates", q).json()["data"]]  # noqa: E731
    assert names(type="MARKETING", sort="name", dir="asc") == ["Alpha", "Gamma"]
    assert names(search="ABOUT BE") == ["Beta"]
    assert names(sort="bogus", dir="sideways") == ["Gamma", "Beta", "Alpha"]
    assert names(page=5) == []
    assert secret_client.get("/templates", {"type": "OTHER"}).status_code == 422
    assert secret_client.get("/templates", {"page": 0}).status_code == 422


def test_a_list_page_costs_the_same_few_queries(secret_client, project, django_assert_max_num_queries, settings):
    settings.API_KEY_CACHE_SECONDS = 300  # as with Redis in production: the key lookup is not the page's cost
    for index in range(30):
        Template.objects.create(project=project.project, name=f"T{index}", from_email="hello@alice.test")
    secret_client.get("/templates")  # warms the key cache
    # The count and the page.
    with django_assert_max_num_queries(2):
        body = secret_client.get("/templates", {"pageSize": 100}).json()
    assert len(body["data"]) == 30
    with django_assert_max_num_queries(2):
        assert len(secret_client.get("/templates", {"pageSize": 10, "page": 2}).json()["data"]) == 10


def test_duplicate_returns_the_new_id(secret_client):
    original = create(secret_client)
    response = secret_client.post(f"/templates/{original['id']}/duplicate")
    assert response.status_code == 201
    copy = secret_client.get(f"/templates/{response.json()['id']}").json()
    assert copy["name"] == "Welcome (Copy)"
    assert copy["body"] == original["body"] and copy["id"] != original["id"]


def test_usage_and_delete_conflict_while_used(secret_client, monkeypatch):
    template = create(secret_client)

    def finder(project, found):
        return [{"id": "c1", "name": "Spring sale", "status": "DRAFT"}] if str(found.id) == template["id"] else []

    def step_finder(project, found):
        return [{"workflowId": "w1", "workflowName": "Onboarding", "stepId": "s1"}]

    monkeypatch.setitem(usage_finders.implementations, ("template", "campaigns"), finder)
    monkeypatch.setitem(usage_finders.implementations, ("template", "workflowSteps"), step_finder)
    path = f"/templates/{template['id']}/usage"
    response = secret_client.get(path)
    assert response.json() == {
        "campaigns": [{"id": "c1", "name": "Spring sale", "status": "DRAFT"}],
        "workflowSteps": [{"workflowId": "w1", "workflowName": "Onboarding", "stepId": "s1"}],
        "emailsSent": 0,
    }
    assert_documented(response, method="GET", path=path, template="/templates/{id}/usage")
    response = secret_client.delete(f"/templates/{template['id']}")
    assert response.status_code == 409
    assert_documented(response, method="DELETE", path=f"/templates/{template['id']}", template="/templates/{id}")
    assert "Spring sale" in response.json()["error"]["message"]
    assert Template.objects.filter(id=template["id"]).exists()


def test_another_project_cannot_see_or_touch_a_template(secret_client, other_client):
    template = create(secret_client)
    url = f"/templates/{template['id']}"
    assert other_client.get(url).status_code == 404
    assert other_client.get(url).json()["error"]["code"] == "TEMPLATE_NOT_FOUND"
    assert other_client.patch(url, {"name": "x"}, format="json").status_code == 404
    assert other_client.delete(url).status_code == 404
    assert other_client.post(f"{url}/duplicate").status_code == 404
    assert other_client.get(f"{url}/usage").status_code == 404
    assert other_client.get("/templates").json()["total"] == 0
    assert Template.objects.get(id=template["id"]).name == "Welcome"


def test_a_domain_used_by_a_template_cannot_be_deleted(secret_client, project):
    create(secret_client)
    domain = project.project.domains.get(name="alice.test")
    response = secret_client.delete(f"/domains/{domain.id}")
    assert response.status_code == 409
    assert "Welcome" in response.json()["error"]["message"]


def test_an_update_cannot_give_the_sender_a_name_that_adds_a_header(secret_client):
    template = create(secret_client)
    response = secret_client.patch(
        f"/templates/{template['id']}", {"fromName": "Alice\r\nBcc: evil@x.test"}, format="json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "fromName"
    assert Template.objects.get(id=template["id"]).from_name == "Alice"


def test_an_update_past_a_rendering_limit_changes_nothing(secret_client):
    template = create(secret_client)
    looping = {"body": "{% for i in (1..10001) %}x{% endfor %}"}
    response = secret_client.patch(f"/templates/{template['id']}", looping, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0] == {
        "field": "body",
        "message": "Template loops past 10,000 iterations",
        "code": "too_big",
    }
    assert secret_client.get(f"/templates/{template['id']}").json()["body"] == VALID["body"]


def test_a_body_of_2_mb_is_accepted_and_one_byte_more_is_not(secret_client):
    body = "<p>" + "x" * (2 * 1024 * 1024 - 7) + "</p>"
    template = create(secret_client, body=body)
    assert len(template["body"]) == 2 * 1024 * 1024
    response = secret_client.patch(f"/templates/{template['id']}", {"body": body + "x"}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0] == {
        "field": "body",
        "code": "too_big",
        "message": "Must be at most 2 MB (2,097,152 bytes of UTF-8)",
    }
