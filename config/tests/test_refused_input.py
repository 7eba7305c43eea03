"""Input refused whatever the endpoint (core.http.sanity): a NUL character (`\\u0000`), which PostgreSQL stores
in neither text nor JSON, and JSON nested deeper than 64 levels, which the code behind the parser could not walk.
Both used to end in a 500. Served as gunicorn serves it (the fast routes hand such a body to the view) and through
Django's test client."""

import json

import pytest

from config.tests.wsgi import wsgi_call
from contacts.models import Contact, Event
from messaging.models import Email

pytestmark = pytest.mark.django_db

NUL = "\x00"
SEND = {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hi</p>"}


def served(key: str, method: str, path: str, payload: dict):
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    answer = wsgi_call(method, path, body=json.dumps(payload).encode(), headers=headers)
    return answer.status, answer.json()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({**SEND, "data": {"note": f"a{NUL}b"}}, "data.note"),
        ({**SEND, "data": {f"k{NUL}": "x"}}, f"data.k{NUL}"),
        ({**SEND, "data": {"tags": ["ok", {"deep": NUL}]}}, "data.tags.1.deep"),
        ({**SEND, "headers": {"X-Note": f"a{NUL}"}}, "headers.X-Note"),
        ({**SEND, "to": {"name": f"Ann{NUL}", "email": "ann@example.test"}}, "to.name"),
        (
            {**SEND, "attachments": [{"filename": f"a{NUL}.txt", "content": "aGk=", "contentType": "text/plain"}]},
            "attachments.0.filename",
        ),
    ],
)
def test_a_send_with_a_nul_character_is_refused_at_its_field(project, secret_client, payload, field):
    status, body = served(project.keys.secret_key, "POST", "/v1/send", payload)
    viewed = secret_client.post("/v1/send", payload, format="json")
    assert (status, viewed.status_code) == (422, 422)
    assert body["error"]["errors"][0]["field"] == field == viewed.json()["error"]["errors"][0]["field"]
    assert body["error"]["errors"][0]["message"] == "Null characters are not allowed"
    assert (Contact.objects.count(), Email.objects.count()) == (0, 0)


def test_a_track_with_a_nul_character_is_refused(project, public_client):
    payload = {"email": "ann@example.test", "event": "signup", "data": {"plan": f"pro{NUL}"}}
    status, body = served(project.keys.public_key, "POST", "/v1/track", payload)
    viewed = public_client.post("/v1/track", payload, format="json")
    assert (status, viewed.status_code) == (422, 422)
    assert body["error"]["errors"][0]["field"] == "data.plan" == viewed.json()["error"]["errors"][0]["field"]
    assert (Contact.objects.count(), Event.objects.count()) == (0, 0)


def test_a_contact_write_with_a_nul_character_is_refused(project, secret_client):
    created = secret_client.post("/contacts", {"email": "ann@example.test", "data": {"a": NUL}}, format="json")
    assert created.status_code == 422 and created.json()["error"]["errors"][0]["field"] == "data.a"
    contact = Contact.objects.create(project=project.project, email="bob@example.test", data={"a": 1})
    patched = secret_client.patch(f"/contacts/{contact.id}", {"data": {"a": f"x{NUL}"}}, format="json")
    assert patched.status_code == 422
    contact.refresh_from_db()
    assert contact.data == {"a": 1}


def test_a_backslash_u_written_out_is_an_ordinary_string(project):
    payload = {**SEND, "data": {"path": "C:\\u0000"}}  # a backslash, then "u0000": stored as given
    status, _ = served(project.keys.secret_key, "POST", "/v1/send", payload)
    assert status == 200
    assert Contact.objects.get().data == {"path": "C:\\u0000"}


@pytest.mark.parametrize(
    ("method", "url", "message"),
    [
        ("get", "/contacts?search=a%00b", 'Query parameter "search" contains a null character'),
        ("get", "/templates?search=%00", 'Query parameter "search" contains a null character'),
        ("get", "/events?name=%00", 'Query parameter "name" contains a null character'),
        ("get", "/contacts?a%00=1", 'Query parameter "a" contains a null character'),
        ("get", "/contacts/fields/a%00b/values", "The path contains a null character"),
        ("get", "/contacts/fields/a%00b/usage", "The path contains a null character"),
        ("delete", "/contacts/fields/data.a%00b", "The path contains a null character"),
        ("delete", "/events/names/a%00b", "The path contains a null character"),
    ],
)
def test_a_url_with_a_nul_character_is_a_bad_request(secret_client, method, url, message):
    response = getattr(secret_client, method)(url)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("BAD_REQUEST", message)
    assert error["requestId"] == response["X-Request-Id"]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("path", "key"),
    [("/v1/send", "secret_key"), ("/v1/track", "public_key"), ("/contacts", "secret_key")],
)
def test_a_body_nested_too_deep_is_refused_at_its_field(project, path, key):
    headers = {"Authorization": f"Bearer {getattr(project.keys, key)}", "Content-Type": "application/json"}
    fields = '"email":"ann@example.test","event":"signup",' + ",".join(f'"{k}":"{v}"' for k, v in SEND.items())
    deep = wsgi_call("POST", path, body=f'{{{fields},"data":{{"a":{nested(64)}}}}}'.encode(), headers=headers)
    assert deep.status == 422
    [error] = deep.json()["error"]["errors"]
    assert (error["field"], error["code"]) == ("data.a" + ".0" * 62, "too_big")
    parser_gives_up = wsgi_call(
        "POST", path, body=f'{{{fields},"data":{{"a":{nested(100_000)}}}}}'.encode(), headers=headers
    )
    assert parser_gives_up.status == 400
    assert parser_gives_up.json()["error"]["code"] == "INVALID_REQUEST_BODY"
    assert (Contact.objects.count(), Email.objects.count()) == (0, 0)
    fine = wsgi_call("POST", path, body=f'{{{fields},"data":{{"a":{nested(62)}}}}}'.encode(), headers=headers)
    assert fine.status in (200, 201)


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({**SEND, "headers": {"X-Note": "a\ud800"}}, "headers.X-Note"),
        ({**SEND, "data": {"note": "\udfff"}}, "data.note"),
        ({**SEND, "data": {"\ud800": 1}}, "data.\\ud800"),  # the key as sent, escaped
    ],
)
def test_a_lone_surrogate_is_refused_at_its_field(project, payload, field):
    status, body = served(project.keys.secret_key, "POST", "/v1/send", payload)
    assert status == 422
    [error] = body["error"]["errors"]
    assert (error["field"], error["message"]) == (field, "Surrogate characters are not allowed")
    assert Email.objects.count() == 0


def test_a_surrogate_pair_is_an_ordinary_character(project):
    status, _ = served(project.keys.secret_key, "POST", "/v1/send", {**SEND, "data": {"mood": "\ud83d\ude00"}})
    assert status == 200
    assert Contact.objects.get().data == {"mood": "\U0001f600"}
