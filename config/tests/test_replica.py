"""The read replica's router (core.replica): which reads go to the replica, what stays on the primary, and the
fallback when the replica cannot be reached. The replica here is a second connection to the test database, as a
replica is a second server with the same rows; a real streaming replica is in test_replica_streaming.py."""

import logging
import time

import pytest
from django.conf import settings
from django.contrib import admin
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from config.tests.processes import free_port
from contacts.models import Contact
from core import replica
from core.replica import REPLICA, replica_reads
from segments.models import Segment, SegmentMembership, SegmentType

# Transactional: the router keeps every read of a transaction on the primary, and a plain `db` test is one.
pytestmark = pytest.mark.django_db(
    transaction=True, databases=[DEFAULT_DB_ALIAS, REPLICA] if REPLICA in settings.DATABASES else [DEFAULT_DB_ALIAS]
)
CONFIGURED = REPLICA in settings.DATABASES


def _with_replica(settings_dict: dict):
    """A replica alias for the test. A run with DATABASE_REPLICA_URL has its own (the test database, as a mirror)."""
    if CONFIGURED:
        yield connections[REPLICA]
        return
    connections.settings[REPLICA] = settings_dict
    routed = override_settings(DATABASE_ROUTERS=["core.replica.ReplicaRouter"])
    routed.enable()
    wrapper = connections.create_connection(REPLICA)
    # Named apart from its alias: Django's test case refuses connections to the aliases of the settings it was not
    # told of, and this one was added after the test case was made.
    wrapper.alias = f"{REPLICA} (test)"
    connections[REPLICA] = wrapper
    try:
        yield wrapper
    finally:
        routed.disable()
        wrapper.close()
        del connections[REPLICA]
        del connections.settings[REPLICA]


@pytest.fixture(autouse=True)
def _replica_never_failed(monkeypatch):
    monkeypatch.setitem(replica._down, "until", 0.0)
    monkeypatch.setitem(replica._down, "logged_at", float("-inf"))


@pytest.fixture
def replica_db():
    """A replica alias on the test database: a second connection seeing the committed rows, as a streaming replica
    does once it has replayed them."""
    yield from _with_replica(dict(connections[DEFAULT_DB_ALIAS].settings_dict))


@pytest.fixture
def dead_replica():
    """A replica alias on a port nothing listens on."""
    if CONFIGURED:
        pytest.skip("the run has a replica configured (DATABASE_REPLICA_URL)")
    settings_dict = connections.configure_settings(
        {
            DEFAULT_DB_ALIAS: {},
            REPLICA: {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "herald",
                "USER": "postgres",
                "HOST": "127.0.0.1",
                "PORT": free_port(),
                "CONN_HEALTH_CHECKS": True,
            },
        }
    )[REPLICA]
    yield from _with_replica(settings_dict)


def replica_queries(call) -> list[str]:
    """The statements the replica ran during `call()`."""
    with CaptureQueriesContext(connections[REPLICA]) as captured:
        call()
    return [query["sql"] for query in captured.captured_queries]


def test_without_a_replica_the_scope_reads_the_primary():
    if CONFIGURED:
        pytest.skip("the run has a replica configured (DATABASE_REPLICA_URL)")
    with replica_reads():
        assert Contact.objects.all().db == DEFAULT_DB_ALIAS
        assert Contact.objects.count() == 0


def test_reads_go_to_the_replica_only_inside_the_scope(replica_db, project):
    Contact.objects.create(project=project.project, email="ann@example.test")
    assert replica_queries(lambda: list(Contact.objects.all())) == []
    with replica_reads():
        assert Contact.objects.all().db == REPLICA
        queries = replica_queries(lambda: [c.email for c in Contact.objects.all()] == ["ann@example.test"])
    assert len(queries) == 1 and "contacts_contact" in queries[0]
    assert Contact.objects.all().db == DEFAULT_DB_ALIAS


def test_writes_locks_and_transactions_stay_on_the_primary(replica_db, project):
    with replica_reads():
        ann = Contact.objects.get(pk=Contact.objects.create(project=project.project, email="ann@example.test").pk)
        assert ann._state.db == REPLICA
        ann.subscribed = False

        def writes():
            ann.save()
            Contact.objects.filter(pk=ann.pk).update(data={"plan": "pro"})
            Contact.objects.get_or_create(project=project.project, email="bob@example.test")

        # A row read from the replica is saved to the primary, never to the replica.
        assert not [sql for sql in replica_queries(writes) if not sql.startswith("SELECT")]
        assert Contact.objects.select_for_update().db == DEFAULT_DB_ALIAS

        def in_a_transaction():
            with transaction.atomic():
                assert Contact.objects.all().db == DEFAULT_DB_ALIAS
                list(Contact.objects.all())

        assert replica_queries(in_a_transaction) == []
    assert Contact.objects.get(pk=ann.pk).subscribed is False
    assert Contact.objects.get(pk=ann.pk).data == {"plan": "pro"}


def test_an_unreachable_replica_sends_the_reads_to_the_primary_and_is_logged_once(
    dead_replica, project, caplog, monkeypatch
):
    monkeypatch.setattr(settings, "DATABASE_REPLICA_RETRY_SECONDS", 0.2)
    Contact.objects.create(project=project.project, email="ann@example.test")
    with caplog.at_level(logging.WARNING, logger="core.replica"), replica_reads():
        assert [c.email for c in Contact.objects.all()] == ["ann@example.test"]
        first_retry = replica._down["until"]
        assert Contact.objects.all().db == DEFAULT_DB_ALIAS
        # Within the cool-down the replica is not tried again.
        assert replica._down["until"] == first_retry
        time.sleep(0.25)
        assert Contact.objects.count() == 1
        # After it, it is tried again (and found down again), without another log line within the minute.
        assert replica._down["until"] > first_retry
    warnings = [r for r in caplog.records if r.name == "core.replica"]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert "Read replica unreachable, reading from the primary" in warnings[0].getMessage()
    assert str(dead_replica.settings_dict["PORT"]) in warnings[0].getMessage()


# Where the scope is: the heavy reads read the replica, the answers of writes the primary ----------------------------


@pytest.fixture
def static_segment(replica_db, project):
    segment = Segment.objects.create(project=project.project, name="VIP", type=SegmentType.STATIC)
    ann = Contact.objects.create(project=project.project, email="ann@example.test")
    SegmentMembership.objects.create(segment=segment, contact=ann)
    return segment


@pytest.mark.parametrize(
    "path",
    [
        "/segments/{segment}/contacts",
        "/activity",
        "/activity/stats",
        "/activity/types",
        "/activity/recent-count",
        "/activity/upcoming",
        "/analytics/timeseries",
        "/analytics/top-events",
        "/analytics/top-campaigns",
        "/analytics/campaign-stats",
    ],
)
def test_the_heavy_reads_of_the_api_read_the_replica(secret_client, static_segment, path):
    responses = []
    queries = replica_queries(lambda: responses.append(secret_client.get(path.format(segment=static_segment.id))))
    assert responses[0].status_code == 200, responses[0].content
    assert queries
    if path == "/activity/types":  # the events' names, read in raw SQL (contacts.selectors.event_names)
        assert any("WITH RECURSIVE" in sql for sql in queries)


def test_a_member_page_counts_on_the_replica(secret_client, static_segment, project):
    bob = Contact.objects.create(project=project.project, email="bob@example.test")
    SegmentMembership.objects.create(segment=static_segment, contact=bob)
    queries = replica_queries(lambda: secret_client.get(f"/segments/{static_segment.id}/contacts?pageSize=1"))
    assert any("COUNT(" in sql.upper() for sql in queries)
    # The count is kept on the primary.
    static_segment.refresh_from_db()
    assert static_segment.member_count == 2


def test_the_answers_of_writes_read_the_primary(secret_client, static_segment):
    def writes():
        created = secret_client.post("/contacts", {"email": "bob@example.test"}, format="json")
        assert created.status_code == 201, created.content
        added = secret_client.post(
            f"/segments/{static_segment.id}/members", {"emails": ["bob@example.test"]}, format="json"
        )
        assert added.json()["added"] == 1
        assert secret_client.get(f"/segments/{static_segment.id}").json()["memberCount"] == 2

    assert replica_queries(writes) == []


def test_the_export_reads_the_replica(static_segment, project, tmp_path):
    output = tmp_path / "contacts.csv"
    queries = replica_queries(lambda: call_command("export_contacts", "--project", str(project.id), "--output", output))
    assert output.read_text().splitlines()[1].startswith("ann@example.test,")
    # The data keys (raw SQL) and the rows.
    assert len(queries) >= 2 and all("contacts_contact" in sql for sql in queries)


def test_every_admin_change_list_reads_the_replica_and_its_change_pages_the_primary(admin_client, static_segment):
    staff_client = admin_client
    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        responses = []
        queries = replica_queries(lambda url=url: responses.append(staff_client.get(url)))
        assert responses[0].status_code == 200, url
        assert queries, url
    change = f"/admin/segments/segment/{static_segment.id}/change/"
    responses = []
    assert replica_queries(lambda: responses.append(staff_client.get(change))) == []
    assert responses[0].status_code == 200
