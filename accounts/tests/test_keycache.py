"""The shared key cache: requests skip the database, and rotation, disabling and deletion still act at once."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.tenancy import keycache
from accounts.tenancy.keys import hash_key
from accounts.tenancy.services import project_disable, project_enable, project_regenerate_keys
from conftest import client_with

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


@pytest.fixture(autouse=True)
def cache_on(settings):
    settings.API_KEY_CACHE_SECONDS = 300


def _auth_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/probe/secret").status_code == 200
    return sum("accounts_project" in query["sql"] for query in queries)


def test_a_known_key_is_read_from_the_database_once(secret_client):
    assert _auth_queries(secret_client) == 1
    assert _auth_queries(secret_client) == 0


def test_rotation_disabling_and_enabling_act_on_the_next_request(project, secret_client):
    secret_client.get("/probe/secret")
    project_disable(project=project.project, reason="OPERATOR")
    assert secret_client.get("/probe/secret").json()["error"]["code"] == "PROJECT_DISABLED"
    project_enable(project=project.project)
    assert secret_client.get("/probe/secret").status_code == 200
    new = project_regenerate_keys(project=project.project)
    assert secret_client.get("/probe/secret").json()["error"]["code"] == "UNAUTHORIZED"
    assert client_with(new.secret_key).get("/probe/secret").status_code == 200


def test_a_lookup_that_read_the_old_row_cannot_refill_the_cache(project, secret_client):
    old_project = project.project.__class__.objects.get(pk=project.id)
    project_regenerate_keys(project=project.project)
    # A request that loaded the row just before the rotation tries to remember it afterwards.
    keycache.remember(hash_key(project.keys.secret_key), old_project)
    assert secret_client.get("/probe/secret").json()["error"]["code"] == "UNAUTHORIZED"


def test_a_deleted_project_stops_authenticating(project, secret_client, admin_user, client):
    secret_client.get("/probe/secret")
    client.force_login(admin_user)
    client.post(f"/admin/accounts/project/{project.id}/delete/", {"post": "yes"})
    assert secret_client.get("/probe/secret").json()["error"]["code"] == "UNAUTHORIZED"


def test_fields_outside_the_cache_are_read_fresh_not_defaulted(project):
    from django.utils import timezone

    from accounts.models import Project
    from accounts.tenancy.selectors import api_key_lookup

    api_key_lookup(token=project.keys.secret_key)  # fills the cache
    moment = timezone.now().replace(microsecond=0)
    Project.objects.filter(pk=project.id).update(disabled_at=moment)
    cached = api_key_lookup(token=project.keys.secret_key).project
    assert cached.disabled_at == moment


def test_a_tracking_mode_change_reaches_the_next_request(project):
    from accounts.models import Project
    from accounts.tenancy.selectors import api_key_lookup
    from accounts.tenancy.services import project_auth_changed

    api_key_lookup(token=project.keys.secret_key)  # fills the cache
    project.project.tracking_mode = Project.TrackingMode.DISABLED
    project.project.save(update_fields=["tracking_mode"])
    project_auth_changed(project=project.project)  # what the admin's save does
    cached = api_key_lookup(token=project.keys.secret_key).project
    assert cached.tracking_mode == Project.TrackingMode.DISABLED
