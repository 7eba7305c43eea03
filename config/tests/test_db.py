"""The prepared per-request statements of `core.db` read and write what the ORM would."""

import uuid

import pytest
from django.db import DataError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.db import fetchone_prepared, insert_prepared, insert_varied, select_prepared
from messaging.models import Email, Suppression

pytestmark = pytest.mark.django_db


def _email(project, **overrides) -> Email:
    values = dict(
        project=project,
        to_email="ann@example.test",
        to_name="Ann \u00e9\u4e2d",
        from_email="hello@alice.test",
        subject="Hi \"there\" \\ 'you'",
        html="<p>Hello</p>\n",
        headers={"X-A": "1", "nested": {"list": [1, 2.5, None, True]}},
        message_id="<x@alice.test>",
        created_at=timezone.now().replace(microsecond=123456),
        updated_at=timezone.now(),
    )
    return Email(**{**values, **overrides})


def test_insert_prepared_stores_what_bulk_create_stores(project):
    by_orm, by_insert = _email(project.project, id=uuid.uuid4()), _email(project.project, id=uuid.uuid4())
    by_insert.created_at = by_orm.created_at
    by_insert.updated_at = by_orm.updated_at
    Email.objects.bulk_create([by_orm])
    insert_prepared([by_insert])
    assert by_insert._state.adding is False
    stored = {row.pop("id"): row for row in Email.objects.values()}
    assert stored[by_insert.id] == stored[by_orm.id]
    assert stored[by_insert.id]["created_at"].microsecond == 123456


def test_select_prepared_converts_as_the_orm_does_and_filters_by_project(project, other_project):
    mine = Suppression.objects.create(project=project.project, email="a@x.test", reason="MANUAL")
    Suppression.objects.create(project=other_project.project, email="a@x.test", reason="BOUNCE")
    [found] = select_prepared(
        Suppression, ("id", "project", "email", "reason"), project=project.id, email__in=["a@x.test", "b@x.test"]
    )
    assert (found.id, found.project_id, found.reason) == (mine.id, project.id, "MANUAL")
    assert isinstance(found.id, uuid.UUID) and found.detail == ""  # a deferred field is read on access


def test_insert_varied_stores_the_prototype_with_each_rows_own_columns(project):
    """What `bulk_create` would store for each row; a row that breaks a unique constraint is left out and not
    counted."""
    prototype = _email(project.project)
    taken = _email(project.project, id=uuid.uuid4(), to_email="old@example.test")
    taken.save()
    ids = [uuid.uuid4(), taken.id, uuid.uuid4()]
    addresses = ["a@example.test", "b@example.test", "c@example.test"]
    inserted = insert_varied(prototype, {"id": ids, "to_email": addresses}, ignore_conflicts=True)
    assert inserted == 2
    by_orm = _email(project.project, id=uuid.uuid4(), created_at=prototype.created_at, updated_at=prototype.updated_at)
    Email.objects.bulk_create([by_orm])
    stored = {row.pop("id"): row for row in Email.objects.values()}
    expected = stored[by_orm.id]
    assert stored[ids[0]] == {**expected, "to_email": "a@example.test"}
    assert stored[ids[2]] == {**expected, "to_email": "c@example.test"}
    assert stored[taken.id]["to_email"] == "old@example.test"  # the conflicting row stayed as it was


def test_insert_varied_keeps_every_character_of_text_and_nulls_and_json_as_they_are(project):
    """Text columns travel as array literals: quotes, backslashes, braces, commas, blanks, newlines, a text that
    reads NULL and an empty one come back unchanged, a NULL stays NULL, and a JSON column (sent as a list) too."""
    values = ['a"b', "c\\d", "{e,f}", " g ", "h\ni", "NULL", "", "\u00e9\u4e2d"]
    ids = [uuid.uuid4() for _ in values]
    headers = [{"X-Row": str(index), "quote": '"'} for index in range(len(values))]
    varying = {"id": ids, "to_name": values, "template": [None] * len(values), "headers": headers}
    assert insert_varied(_email(project.project), varying) == len(values)
    stored = {row["id"]: row for row in Email.objects.values("id", "to_name", "template", "headers")}
    assert [stored[email_id]["to_name"] for email_id in ids] == values
    assert [stored[email_id]["template"] for email_id in ids] == [None] * len(values)
    assert [stored[email_id]["headers"] for email_id in ids] == headers


def test_fetchone_prepared_reads_what_a_django_cursor_reads(project):
    email = _email(project.project, id=uuid.uuid4())
    insert_prepared([email])
    sql = "SELECT subject, headers, created_at FROM messaging_email WHERE message_id = %s"
    params = [email.message_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        expected = cursor.fetchone()
    assert fetchone_prepared(sql, params) == expected
    assert fetchone_prepared(sql, ["<none@alice.test>"]) is None


@pytest.mark.django_db(transaction=True)
def test_fetchone_prepared_raises_djangos_errors_and_works_after_them():
    if connection.vendor != "postgresql":
        pytest.skip("elsewhere it runs on a Django cursor")
    with pytest.raises(DataError):
        fetchone_prepared("SELECT 1 / %s", [0])
    assert fetchone_prepared("SELECT %s + 1", [1]) == (2,)


def test_fetchone_prepared_is_seen_by_a_connection_that_logs_its_queries():
    with CaptureQueriesContext(connection) as captured:
        fetchone_prepared("SELECT %s + 40", [2])
    assert [query["sql"] for query in captured.captured_queries] == ["SELECT 2 + 40"]


@pytest.mark.django_db(transaction=True)
def test_fetchone_prepared_follows_the_connection_when_it_is_replaced():
    assert fetchone_prepared("SELECT %s + 1", [1]) == (2,)
    connection.close()
    assert fetchone_prepared("SELECT %s + 2", [1]) == (3,)
