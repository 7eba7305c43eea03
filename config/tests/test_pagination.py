from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Job

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


@pytest.fixture
def jobs(project):
    now = timezone.now()
    created = []
    for index in range(45):
        job = Job.objects.create(project=project.project, type=f"type-{index % 7}")
        # Ties on created_at on purpose: the keyset must still visit every row exactly once.
        Job.objects.filter(pk=job.pk).update(created_at=now - timedelta(seconds=index // 3))
        created.append(job)
    return created


def _walk(client, query):
    seen, totals, cursor = [], [], None
    while True:
        params = dict(query, **({"cursor": cursor} if cursor else {}))
        body = client.get("/probe/jobs", params).json()
        seen += [row["id"] for row in body["data"]]
        totals.append(body["total"])
        if not body["hasMore"]:
            assert body["cursor"] is None
            return seen, totals
        cursor = body["cursor"]


@pytest.mark.parametrize("query", [{}, {"limit": 7}, {"sort": "type", "dir": "asc", "limit": 10}])
def test_cursor_pages_visit_every_row_once_in_order(secret_client, jobs, query):
    seen, totals = _walk(secret_client, query)
    assert sorted(seen) == sorted(str(job.id) for job in jobs)
    assert len(seen) == len(set(seen))
    assert totals[0] == 45
    assert all(total == 0 for total in totals[1:])


def test_limit_defaults_to_20_and_is_clamped_to_100(secret_client, jobs):
    assert len(secret_client.get("/probe/jobs").json()["data"]) == 20
    assert len(secret_client.get("/probe/jobs", {"limit": 500}).json()["data"]) == 45


@pytest.mark.parametrize("limit", ["abc", "-5", "0", "1.5"])
def test_a_bad_limit_is_422(secret_client, jobs, limit):
    response = secret_client.get("/probe/jobs", {"limit": limit})
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "limit"


def test_unknown_sort_and_dir_fall_back_to_defaults(secret_client, jobs):
    default = secret_client.get("/probe/jobs").json()["data"]
    fallback = secret_client.get("/probe/jobs", {"sort": "password", "dir": "sideways"}).json()["data"]
    assert fallback == default


def test_a_tampered_or_foreign_cursor_is_400(secret_client, jobs):
    cursor = secret_client.get("/probe/jobs", {"limit": 5}).json()["cursor"]
    for bad in (cursor[:-2] + ("xx" if not cursor.endswith("xx") else "yy"), "garbage", "a:b"):
        response = secret_client.get("/probe/jobs", {"cursor": bad})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "BAD_REQUEST"
    other_sort = secret_client.get("/probe/jobs", {"cursor": cursor, "sort": "type"})
    assert other_sort.status_code == 400


def test_a_list_page_costs_a_fixed_number_of_queries(secret_client, jobs, django_assert_max_num_queries):
    with django_assert_max_num_queries(4):
        secret_client.get("/probe/jobs", {"limit": 100})
