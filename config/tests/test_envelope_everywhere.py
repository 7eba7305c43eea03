"""Every answer of the service is the JSON error envelope: unknown routes whatever the method (the CSRF check
once answered a POST with Django's HTML page), a wrong method on any route, a bad Host, a failed CSRF check."""

import pytest
from django.test import Client

METHODS = ["get", "post", "put", "patch", "delete", "options"]


@pytest.fixture
def browser():
    # A real browser's client: CSRF is enforced, as the test client normally skips it.
    return Client(enforce_csrf_checks=True)


def _envelope(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:200]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code
    return body["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", ["/no/such/route", "/v2/send", "/contacts/x/y/z"])
def test_unknown_routes_answer_the_404_envelope_for_every_method(browser, method, path):
    body = {} if method in ("get", "options") else {"data": "{}", "content_type": "application/json"}
    response = getattr(browser, method)(path, **body)
    error = _envelope(response, 404, "RESOURCE_NOT_FOUND")
    assert error["message"] == f"Route {method.upper()} {path} not found"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("post", "/health", "GET"),
        ("delete", "/config", "GET"),
        ("put", "/webhooks/generic", "POST"),
        ("put", "/unsubscribe/some-token", "GET, POST"),
        ("post", "/o/some-token", "GET"),
        ("delete", "/c/some-token", "GET"),
    ],
)
def test_a_wrong_method_answers_the_405_envelope_with_allow(browser, method, path, allowed):
    response = getattr(browser, method)(path)
    error = _envelope(response, 405, "METHOD_NOT_ALLOWED")
    assert method.upper() in error["message"]
    assert {part.strip() for part in response["Allow"].split(",")} >= {part.strip() for part in allowed.split(",")}


@pytest.mark.django_db
def test_a_wrong_method_on_an_api_resource_answers_405(secret_client):
    response = secret_client.put("/templates", {}, format="json")
    _envelope(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path, takes, hint",
    [
        ("/domains", "POST", "GET /domains/project/{projectId}"),
        ("/segments/00000000-0000-0000-0000-000000000001/members", "POST, DELETE", "GET /segments/{id}/contacts"),
        ("/workflows/00000000-0000-0000-0000-000000000001/steps", "POST", "GET /workflows/{id}"),
        ("/contacts/import", "POST", None),
    ],
)
def test_a_guessed_route_says_what_it_takes_and_where_to_read_instead(secret_client, path, takes, hint):
    error = _envelope(secret_client.get(path), 405, "METHOD_NOT_ALLOWED")
    assert error["message"] == f'Method "GET" not allowed on {path}: it takes {takes}'
    if hint:
        assert error["suggestion"].endswith(hint)
    else:
        assert "suggestion" not in error


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post"])
def test_a_bad_host_answers_the_400_envelope(browser, method):
    response = getattr(browser, method)("/health", HTTP_HOST="evil.example")
    _envelope(response, 400, "BAD_REQUEST")


@pytest.mark.django_db
def test_a_cookie_form_post_without_its_csrf_token_answers_the_403_envelope(browser):
    response = browser.post("/admin/login/", {"username": "root@example.test", "password": "x"})
    error = _envelope(response, 403, "CSRF_FAILED")
    assert "CSRF" in error["message"]
