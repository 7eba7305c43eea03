"""The prepared per-request statements of `core.db` read and write what the ORM would."""

import uuid

import pytest
from django.utils import timezone

from core.db import insert_prepared, select_prepared
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
