import pytest

from contacts.models import Contact, Event
from contacts.tests.conftest import error_of, subscription_events

pytestmark = pytest.mark.django_db

ISO = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"


def test_create_returns_201_with_meta_and_normalised_email(secret_client, project):
    response = secret_client.post("/contacts", {"email": "  Ada@Example.COM ", "data": {"plan": "pro"}}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["email"] == "ada@example.com"
    assert body["subscribed"] is True
    assert body["snoozedUntil"] is None
    assert body["data"] == {"plan": "pro"}
    assert body["_meta"] == {"isNew": True, "isUpdate": False}
    assert set(body) == {"id", "email", "subscribed", "snoozedUntil", "data", "createdAt", "updatedAt", "_meta"}
    import re

    assert re.match(ISO, body["createdAt"]) and re.match(ISO, body["updatedAt"])
    contact = Contact.objects.get()
    assert contact.project_id == project.id and str(contact.id) == body["id"]


def test_create_existing_email_updates_with_200(secret_client, make_contact):
    contact = make_contact("ada@example.com", data={"plan": "free", "city": "Paris"})
    response = secret_client.post(
        "/contacts", {"email": "ADA@example.com", "data": {"plan": "pro", "city": None}}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(contact.id)
    assert body["_meta"] == {"isNew": False, "isUpdate": True}
    assert body["data"] == {"plan": "pro"}
    assert Contact.objects.count() == 1


def test_create_subscribed_false_is_honoured(secret_client):
    response = secret_client.post("/contacts", {"email": "a@example.com", "subscribed": False}, format="json")
    assert response.json()["subscribed"] is False
    assert subscription_events() == []


@pytest.mark.parametrize("body", [{}, {"email": None}, {"email": ""}, {"data": {"a": 1}}])
def test_create_without_email_is_a_bare_400(secret_client, body):
    response = secret_client.post("/contacts", body, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    assert Contact.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"email": "not-an-email"}, "email", "invalid_string"),
        ({"email": 42}, "email", "invalid_type"),
        ({"email": "a@example.com", "subscribed": "yes"}, "subscribed", "invalid_type"),
        ({"email": "a@example.com", "data": "text"}, "data", "invalid_type"),
        ({"email": "a@example.com", "data": [1, 2]}, "data", "invalid_type"),
        ({"email": "a@example.com", "data": {"x" * 256: 1}}, "data", "too_big"),
        ({"email": "a@example.com", "data": {"big": "x" * 70000}}, "data", "too_big"),
        ({"email": "a@example.com", "data": {"locale": 5}}, "data.locale", "invalid_type"),
    ],
)
def test_create_bad_input_is_422_and_writes_nothing(secret_client, body, field, code):
    response = secret_client.post("/contacts", body, format="json")
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["errors"][0]["field"] == field
    assert error["errors"][0]["code"] == code
    assert Contact.objects.count() == 0


def test_malformed_json_is_400(secret_client):
    response = secret_client.generic("POST", "/contacts", "{nope", content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_REQUEST_BODY"


def test_get_patch_delete_roundtrip(secret_client, make_contact):
    contact = make_contact("ada@example.com", data={"plan": "free"})
    Event.objects.create(project=contact.project, contact=contact, name="signup")
    assert secret_client.get(f"/contacts/{contact.id}").json()["email"] == "ada@example.com"

    response = secret_client.patch(
        f"/contacts/{contact.id}", {"email": "Lovelace@Example.com", "data": {"plan": "pro"}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["email"] == "lovelace@example.com"
    assert response.json()["data"] == {"plan": "pro"}

    response = secret_client.delete(f"/contacts/{contact.id}")
    assert response.status_code == 204
    assert response.content == b""
    assert not Contact.objects.exists() and not Event.objects.exists()


def test_patch_data_null_clears_all_data(secret_client, make_contact):
    contact = make_contact(data={"a": 1, "b": 2})
    response = secret_client.patch(f"/contacts/{contact.id}", {"data": None}, format="json")
    assert response.json()["data"] == {}


def test_patch_email_taken_is_409_and_changes_nothing(secret_client, make_contact):
    make_contact("taken@example.com")
    contact = make_contact("ada@example.com")
    response = secret_client.patch(
        f"/contacts/{contact.id}", {"email": "TAKEN@example.com", "data": {"x": 1}}, format="json"
    )
    assert response.status_code == 409
    assert error_of(response)["code"] == "CONFLICT"
    contact.refresh_from_db()
    assert contact.email == "ada@example.com" and contact.data == {}


def test_patch_email_of_another_project_is_allowed(secret_client, make_contact, other_project):
    make_contact("shared@example.com", persona=other_project)
    contact = make_contact("ada@example.com")
    response = secret_client.patch(f"/contacts/{contact.id}", {"email": "shared@example.com"}, format="json")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("start", "changes", "expected"),
    [
        (True, [False], ["contact.unsubscribed"]),
        (False, [True], ["contact.subscribed"]),
        (True, [True], []),
        (True, [False, False, True], ["contact.unsubscribed", "contact.subscribed"]),
    ],
)
def test_patch_subscription_emits_events_only_on_change(
    secret_client, make_contact, run_on_commit, recorded, start, changes, expected
):
    contact = make_contact(subscribed=start)
    for value in changes:
        run_on_commit(lambda v=value: secret_client.patch(f"/contacts/{contact.id}", {"subscribed": v}, format="json"))
    assert subscription_events(contact) == expected
    assert [name for name, _ in recorded["single"]] == expected
    contact.refresh_from_db()
    assert contact.subscribed is changes[-1]


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_other_project_gets_404_for_a_contact(other_client, make_contact, method):
    contact = make_contact()
    response = getattr(other_client, method)(f"/contacts/{contact.id}", {"subscribed": False}, format="json")
    assert response.status_code == 404
    error = error_of(response)
    assert error["code"] == "CONTACT_NOT_FOUND"
    assert error["message"] == f'Contact with ID "{contact.id}" was not found'
    assert error["details"] == {"resource": "Contact", "id": str(contact.id)}
    contact.refresh_from_db()
    assert contact.subscribed is True


@pytest.mark.parametrize("contact_id", ["not-a-uuid", "00000000-0000-4000-8000-000000000000"])
def test_unknown_contact_is_404(secret_client, contact_id):
    assert error_of(secret_client.get(f"/contacts/{contact_id}"))["code"] == "CONTACT_NOT_FOUND"


def test_public_key_cannot_use_contacts(public_client):
    response = public_client.get("/contacts")
    assert response.status_code == 401
    assert error_of(response)["code"] == "INVALID_API_KEY"


def test_upsert_of_same_email_in_two_projects_keeps_them_apart(secret_client, other_client):
    secret_client.post("/contacts", {"email": "a@example.com", "data": {"p": 1}}, format="json")
    response = other_client.post("/contacts", {"email": "a@example.com", "data": {"p": 2}}, format="json")
    assert response.status_code == 201
    assert sorted(Contact.objects.values_list("data", flat=True), key=str) == [{"p": 1}, {"p": 2}]


# List ------------------------------------------------------------------------------------------------------------


@pytest.fixture
def five_contacts(make_contact):
    emails = ["carol@b.test", "alice@a.test", "eve@c.test", "bob@a.test", "dave@b.test"]
    return [make_contact(email, subscribed=i % 2 == 0) for i, email in enumerate(emails)]


def _emails(response):
    return [c["email"] for c in response.json()["data"]]


def test_list_defaults_newest_first_with_total(secret_client, five_contacts, django_assert_max_num_queries):
    with django_assert_max_num_queries(4):
        response = secret_client.get("/contacts")
    body = response.json()
    assert body["total"] == 5 and body["hasMore"] is False and body["cursor"] is None
    assert _emails(response) == [c.email for c in reversed(five_contacts)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("sort=email&dir=asc", ["alice@a.test", "bob@a.test", "carol@b.test", "dave@b.test", "eve@c.test"]),
        ("sort=email", ["eve@c.test", "dave@b.test", "carol@b.test", "bob@a.test", "alice@a.test"]),
        ("sort=email&dir=sideways", ["eve@c.test", "dave@b.test", "carol@b.test", "bob@a.test", "alice@a.test"]),
        ("sort=nonsense&dir=asc", ["carol@b.test", "alice@a.test", "eve@c.test", "bob@a.test", "dave@b.test"]),
        ("search=A.TEST&sort=email&dir=asc", ["alice@a.test", "bob@a.test"]),
        ("search=b&sort=email&dir=asc", ["bob@a.test", "carol@b.test", "dave@b.test"]),
        ("subscribed=true&sort=email&dir=asc", ["carol@b.test", "dave@b.test", "eve@c.test"]),
        ("subscribed=false&sort=email&dir=asc", ["alice@a.test", "bob@a.test"]),
        (
            "subscribed=maybe&sort=email&dir=asc",
            ["alice@a.test", "bob@a.test", "carol@b.test", "dave@b.test", "eve@c.test"],
        ),
    ],
)
def test_list_sort_search_and_filter(secret_client, five_contacts, query, expected):
    response = secret_client.get(f"/contacts?{query}")
    assert _emails(response) == expected
    assert response.json()["total"] == len(expected)


@pytest.mark.parametrize("sort", ["createdAt", "email"])
def test_cursor_walks_every_contact_once(secret_client, five_contacts, sort):
    seen, cursor, pages = [], None, 0
    while True:
        url = f"/contacts?limit=2&sort={sort}" + (f"&cursor={cursor}" if cursor else "")
        body = secret_client.get(url).json()
        pages += 1
        assert body["total"] == (5 if pages == 1 else 0)
        seen += [c["email"] for c in body["data"]]
        if not body["hasMore"]:
            break
        cursor = body["cursor"]
    assert pages == 3 and sorted(seen) == sorted(c.email for c in five_contacts) and len(seen) == 5


def test_limit_is_clamped_to_100(secret_client, make_contact):
    for i in range(101):
        make_contact(f"c{i}@example.com")
    assert len(secret_client.get("/contacts?limit=500").json()["data"]) == 100


@pytest.mark.parametrize(
    ("query", "status"), [("limit=abc", 422), ("limit=-5", 422), ("limit=0", 422), ("cursor=forged", 400)]
)
def test_bad_list_parameters(secret_client, five_contacts, query, status):
    response = secret_client.get(f"/contacts?{query}")
    assert response.status_code == status
    assert error_of(response)["code"] == ("VALIDATION_ERROR" if status == 422 else "BAD_REQUEST")


def test_tampered_cursor_is_400(secret_client, five_contacts):
    cursor = secret_client.get("/contacts?limit=2").json()["cursor"]
    tampered = cursor[:-3] + ("aaa" if not cursor.endswith("aaa") else "bbb")
    response = secret_client.get(f"/contacts?limit=2&cursor={tampered}")
    assert response.status_code == 400


def test_other_project_sees_no_contacts(other_client, five_contacts):
    body = other_client.get("/contacts").json()
    assert body["data"] == [] and body["total"] == 0


# Lookup -----------------------------------------------------------------------------------------------------------


def test_lookup_splits_found_and_not_found(secret_client, make_contact, other_project):
    ada = make_contact("ada@example.com")
    make_contact("bob@example.com", persona=other_project)
    response = secret_client.post(
        "/contacts/lookup", {"emails": ["ADA@example.com", "bob@example.com", "ada@example.com"]}, format="json"
    )
    assert response.status_code == 200
    assert response.json() == {
        "found": [{"id": str(ada.id), "email": "ada@example.com"}],
        "notFound": ["bob@example.com"],
    }


@pytest.mark.parametrize(
    ("emails", "field", "code"),
    [
        ([f"u{i}@example.com" for i in range(501)], "emails", "too_big"),
        ([], "emails", "too_small"),
        (["ok@example.com", "nope"], "emails.1", "invalid_string"),
        ("ada@example.com", "emails", "invalid_type"),
    ],
)
def test_lookup_bad_input(secret_client, emails, field, code):
    response = secret_client.post("/contacts/lookup", {"emails": emails}, format="json")
    assert response.status_code == 422
    assert error_of(response)["errors"][0]["field"] == field
    assert error_of(response)["errors"][0]["code"] == code


def test_lookup_of_500_is_one_read(secret_client, make_contact, django_assert_max_num_queries):
    found = [make_contact(f"u{i}@example.com") for i in range(0, 500, 2)]
    # The key, the transaction of a POST (savepoint, release) and one read of the contacts, whatever the count.
    with django_assert_max_num_queries(4):
        response = secret_client.post(
            "/contacts/lookup", {"emails": [f"u{i}@example.com" for i in range(500)]}, format="json"
        )
    assert response.status_code == 200
    body = response.json()
    assert body["found"] == [{"id": str(contact.id), "email": contact.email} for contact in found]
    assert body["notFound"] == [f"u{i}@example.com" for i in range(1, 500, 2)]


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"email": "nope"}, "email", "invalid_string"),
        ({"email": None}, "email", "invalid_type"),
        ({"subscribed": "false"}, "subscribed", "invalid_type"),
        ({"data": "x"}, "data", "invalid_type"),
        ({"data": {"locale": ["en"]}}, "data.locale", "invalid_type"),
        ({"subscribed": False, "data": 5}, "data", "invalid_type"),
    ],
)
def test_patch_bad_input_is_422_and_changes_nothing(secret_client, make_contact, body, field, code):
    contact = make_contact(data={"a": 1})
    response = secret_client.patch(f"/contacts/{contact.id}", body, format="json")
    assert response.status_code == 422
    error = error_of(response)["errors"][0]
    assert (error["field"], error["code"]) == (field, code)
    contact.refresh_from_db()
    assert contact.subscribed is True and contact.data == {"a": 1} and subscription_events() == []


def test_searches_are_planned_for_their_own_term(secret_client, public_client, five_contacts):
    """A search must be planned for its own term: a generic plan, made without it, cannot use the trigram index for
    `LIKE`, which at a million contacts made every search 10-50 times slower (docs/performance.md). PostgreSQL only
    switches once a table is large, so what is checked here is the mechanism: search statements are not prepared
    (unnamed, so planned for their values under `plan_cache_mode=auto`; a forced generic plan would reach them
    too), while the fixed per-request statements of `core.db` are, and keep a generic plan after five runs."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    if not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding"):
        pytest.skip("nothing is prepared without server-side binding (behind PgBouncer in transaction mode)")
    for term in ["a", "b", "c", "alice", "test", "e", "o", "b.t"]:
        assert secret_client.get(f"/contacts?search={term}").status_code == 200
    for _ in range(7):
        assert public_client.post("/v1/track", {"email": "a@x.test", "event": "e"}, format="json").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans FROM pg_prepared_statements")
        prepared = cursor.fetchall()
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "auto"
    # The track's write: its contact and its event in one statement (`contacts.upsert`).
    assert [generic for statement, generic in prepared if "INSERT INTO contacts_event" in statement] == [2]
    assert not [statement for statement, _ in prepared if "LIKE" in statement]
