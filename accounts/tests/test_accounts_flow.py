"""A person's way through the service, end to end over HTTP: sign up, verify the address from the mail, create a
project, invite a colleague who signs up from the invitation, use the dashboard API with the cookie and CSRF token,
rotate the keys (the old key fails at once, even where it was cached), and leave."""

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from accounts.models import Membership
from conftest import browser_client, client_with

PASSPHRASE = "a long and unusual passphrase"


def _token(message) -> str:
    link = re.search(r"https?://\S+", message.text).group(0)
    return parse_qs(urlsplit(link).query)["token"][0]


@pytest.mark.django_db
def test_sign_up_to_leaving(smtp_sink, redis_cache, settings, django_capture_on_commit_callbacks):
    settings.API_KEY_CACHE_SECONDS = 300  # keys are remembered in the shared cache, as in production

    def committed(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()

    owner = browser_client()
    assert (
        committed(
            lambda: owner.post("/auth/signup", {"email": "owner@example.test", "password": PASSPHRASE})
        ).status_code
        == 201
    )
    verified = owner.post("/auth/verify-email", {"token": _token(smtp_sink.received[-1])})
    assert verified.json()["data"]["user"]["emailVerified"] is True

    csrf = {"HTTP_X_CSRFTOKEN": owner.cookies["csrftoken"].value}
    created = owner.post("/users/@me/projects", {"name": "Shop"}, **csrf)
    assert created.status_code == 201
    project = created.json()["data"]
    old_key = client_with(project["secretKey"])
    assert old_key.get("/contacts").status_code == 200

    invited = committed(
        lambda: owner.post(f"/projects/{project['id']}/members", {"email": "colleague@example.test"}, **csrf)
    )
    assert invited.json()["data"]["status"] == "invited"
    colleague = browser_client()
    signed_up = colleague.post(
        "/auth/signup",
        {"email": "colleague@example.test", "password": PASSPHRASE, "token": _token(smtp_sink.received[-1])},
    )
    assert signed_up.status_code == 201
    assert [p["id"] for p in colleague.get("/users/@me/projects").json()["data"]] == [project["id"]]

    colleague.credentials(HTTP_X_CSRFTOKEN=colleague.cookies["csrftoken"].value, HTTP_X_PROJECT_ID=project["id"])
    contact = colleague.post("/contacts", {"email": "customer@example.test"})
    assert contact.status_code == 201
    assert old_key.get(f"/contacts/{contact.json()['id']}").status_code == 200

    rotated = owner.post(f"/users/@me/projects/{project['id']}/regenerate-keys", **csrf)
    assert rotated.status_code == 200
    assert old_key.get("/contacts").status_code == 401
    assert client_with(rotated.json()["data"]["secretKey"]).get("/contacts").status_code == 200
    assert colleague.get("/contacts").status_code == 200  # sessions do not depend on the keys

    colleague_id = signed_up.json()["data"]["user"]["id"]
    assert colleague.delete(f"/projects/{project['id']}/members/{colleague_id}").status_code == 204
    assert colleague.get("/contacts").json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    assert list(Membership.objects.values_list("user__email", "role")) == [("owner@example.test", "OWNER")]
