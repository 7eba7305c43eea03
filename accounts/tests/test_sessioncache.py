"""The shared cache of a dashboard session's access to a project: requests skip the session and the database, and
every change that ends or narrows the access acts on the very next request."""

import uuid
from http.cookies import SimpleCookie

import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.identity.users import user_get_or_create
from accounts.models import Membership, User
from accounts.tenancy import sessioncache
from accounts.tenancy.members import member_add
from accounts.tenancy.selectors import session_membership
from accounts.tenancy.services import project_disable, project_enable
from conftest import PASSWORD, browser_client, session_client

pytestmark = pytest.mark.django_db

CONTACTS = "/contacts?limit=1"


@pytest.fixture(autouse=True)
def cache_on(redis_cache, settings):
    settings.SESSION_ACCESS_CACHE_SECONDS = 300


@pytest.fixture
def owner(project):
    return session_client(project.owner_email, project.id)


@pytest.fixture
def bob(project):
    """An ADMIN of the project, logged in, whose access is in the cache."""
    user_get_or_create(email="bob@example.test", password=PASSWORD, verified=True)
    member_add(
        actor=Membership.objects.get(role="OWNER", project=project.project), email="bob@example.test", role="ADMIN"
    )
    client = session_client("bob@example.test", project.id)
    assert client.get(CONTACTS).status_code == 200
    return client


def _bob() -> User:
    return User.objects.get(email="bob@example.test")


def _session_queries(client) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(CONTACTS)
    assert response.status_code == 200, response.content
    return sum("accounts_membership" in q["sql"] or "django_session" in q["sql"] for q in queries), response


def test_a_session_reads_its_access_from_the_database_once_and_counts_once(owner, one_rate_window):
    queries, first = _session_queries(owner)
    assert queries >= 1
    queries, second = _session_queries(owner)
    assert queries == 0
    # Counted in the project's budget in the same round trip: one request, one count.
    assert int(first["RateLimit-Remaining"]) - int(second["RateLimit-Remaining"]) == 1
    assert "Cookie" in second["Vary"]


def test_the_cache_is_per_session_and_per_project(project, other_project, owner):
    owner.get(CONTACTS)
    # The same session naming a project its user is not a member of is still refused.
    owner.credentials(HTTP_X_CSRFTOKEN=owner.cookies["csrftoken"].value, HTTP_X_PROJECT_ID=str(other_project.id))
    response = owner.get(CONTACTS)
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
    # A made-up session key finds nothing.
    owner.cookies["sessionid"] = "x" * 32
    owner.credentials(HTTP_X_PROJECT_ID=str(project.id))
    assert owner.get(CONTACTS).status_code == 401


def _refused(client, code: str) -> None:
    response = client.get(CONTACTS)
    assert response.status_code in (401, 403), response.content
    assert response.json()["error"]["code"] == code


def test_a_removed_member_is_refused_at_once(project, owner, bob):
    assert owner.delete(f"/projects/{project.id}/members/{_bob().id}").status_code == 204
    _refused(bob, "PROJECT_ACCESS_DENIED")


def test_a_member_who_leaves_is_refused_at_once(project, bob):
    assert bob.delete(f"/projects/{project.id}/members/{_bob().id}").status_code == 204
    _refused(bob, "PROJECT_ACCESS_DENIED")


def test_a_lowered_role_acts_at_once(project, owner, bob):
    domain = f"/domains/{uuid.uuid4()}"
    assert bob.delete(domain).status_code == 404  # an ADMIN may; there is no such domain
    assert owner.patch(f"/projects/{project.id}/members/{_bob().id}", {"role": "MEMBER"}).status_code == 200
    response = bob.delete(domain)
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"


def test_logging_out_ends_every_copy_of_the_cookie_at_once(project, bob):
    copy = browser_client()
    copy.cookies = SimpleCookie(bob.cookies)  # the same cookie, elsewhere
    copy.credentials(HTTP_X_PROJECT_ID=str(project.id))
    assert copy.get(CONTACTS).status_code == 200
    bob.get("/auth/logout")
    _refused(copy, "MISSING_AUTH")


def test_a_password_change_ends_the_sessions_at_once(bob):
    user = _bob()
    user.password = make_password("a new and different passphrase")
    user.save(update_fields=["password"])
    _refused(bob, "MISSING_AUTH")


def test_a_deactivated_user_is_refused_at_once(bob, admin_client):
    user = _bob()
    user.is_active = False
    user.save(update_fields=["is_active"])
    _refused(bob, "MISSING_AUTH")


def test_membership_removed_in_the_admin_acts_at_once(bob, admin_client):
    membership = Membership.objects.get(user=_bob())
    response = admin_client.post(f"/admin/accounts/membership/{membership.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    _refused(bob, "PROJECT_ACCESS_DENIED")


def test_a_disabled_then_enabled_project_acts_at_once(project, bob):
    project_disable(project=project.project, reason="OPERATOR")
    _refused(bob, "PROJECT_DISABLED")
    project_enable(project=project.project)
    assert bob.get(CONTACTS).status_code == 200


def test_a_deleted_project_is_refused_at_once(project, owner, bob):
    assert owner.delete(f"/users/@me/projects/{project.id}").status_code == 204
    _refused(bob, "PROJECT_ACCESS_DENIED")


def test_a_request_that_read_the_membership_before_a_removal_cannot_bring_it_back(project, bob):
    """A request reads the generations and the membership, a removal commits, then the request writes its entry."""
    user = _bob()
    seen = sessioncache.generations(str(user.pk), str(project.id))
    old = session_membership(user_id=user.pk, project_id=project.id)
    Membership.objects.filter(user=user).get().delete()
    session = bob.session
    sessioncache.remember(session, old, seen)
    _refused(bob, "PROJECT_ACCESS_DENIED")
