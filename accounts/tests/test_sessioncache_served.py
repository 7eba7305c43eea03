"""The session cache across processes: two gunicorn servers share Redis, as production's do; a member removed
through one is refused by the other on the very next request."""

import httpx
import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from accounts.identity.users import user_get_or_create
from accounts.models import Membership, User
from accounts.tenancy.members import member_add
from config.tests.processes import gunicorn_server
from config.tests.test_integration import _redis_cache_url
from conftest import PASSWORD

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _login(base: str, email: str, project_id) -> dict[str, str]:
    """The headers of a logged-in browser: the cookies (sent by hand: they are Secure, the servers plain HTTP), the
    CSRF token and the project."""
    response = httpx.post(f"{base}/auth/login", json={"email": email, "password": PASSWORD})
    assert response.status_code == 200, response.text
    cookies = "; ".join(f"{name}={value}" for name, value in response.cookies.items())
    return {"Cookie": cookies, "X-CSRFToken": response.cookies["csrftoken"], "X-Project-Id": str(project_id)}


def _servers_password(email: str) -> None:
    # The servers run the production settings, which do not know the tests' fast hasher.
    hasher = PBKDF2PasswordHasher()
    hasher.iterations = 1000
    User.objects.filter(email=email).update(password=hasher.encode(PASSWORD, hasher.salt()))


def test_a_member_removed_through_one_server_is_refused_by_the_other_at_once(project):
    user_get_or_create(email="bob@example.test", password=PASSWORD, verified=True)
    for email in (project.owner_email, "bob@example.test"):
        _servers_password(email)
    member_add(
        actor=Membership.objects.get(role="OWNER", project=project.project), email="bob@example.test", role="ADMIN"
    )
    bob_id = User.objects.get(email="bob@example.test").id
    env = {"CACHE_URL": _redis_cache_url(), "SESSION_ACCESS_CACHE_SECONDS": "300"}
    with gunicorn_server(**env) as first, gunicorn_server(**env) as second:
        owner = _login(first, project.owner_email, project.id)
        bob = _login(first, "bob@example.test", project.id)
        for base in (first, second, first, second):  # each server has read bob's access (from the cache from then on)
            assert httpx.get(f"{base}/contacts?limit=1", headers=bob).status_code == 200
        removed = httpx.delete(f"{first}/projects/{project.id}/members/{bob_id}", headers=owner)
        assert removed.status_code == 204, removed.text
        for base in (second, first):
            response = httpx.get(f"{base}/contacts?limit=1", headers=bob)
            assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
        assert httpx.get(f"{second}/contacts?limit=1", headers=owner).status_code == 200
