import time
from datetime import timedelta

import httpx
import pytest
import redis
from django.conf import settings
from django.utils import timezone

from accounts.models import IdempotencyRecord
from config.celery import app
from config.tasks import apply_retention_task
from config.tests.processes import celery_worker, gunicorn_server, wait_until
from conftest import REDIS_URL

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_real_worker_runs_a_queued_periodic_task(project):
    IdempotencyRecord.objects.create(
        project=project.project,
        key="stale",
        method="POST",
        path="/v1/send",
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    app.conf.task_always_eager = False
    try:
        apply_retention_task.delay()
    finally:
        app.conf.task_always_eager = True
    with celery_worker():
        wait_until(lambda: not IdempotencyRecord.objects.exists(), timeout=60, what="the worker to purge the key")


def _redis_cache_url() -> str:
    url = settings.CACHES["default"].get("LOCATION", "")
    # Without a Redis cache configured, the tests' own database: the test flushes the one it uses.
    url = url if isinstance(url, str) and url.startswith("redis://") else REDIS_URL
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip(f"needs a Redis server (CACHE_URL or {REDIS_URL})")
    return url


def test_the_rate_limit_holds_across_two_server_processes_sharing_redis(project):
    cache_url = _redis_cache_url()
    env = {"CACHE_URL": cache_url, "API_RATE_LIMIT_PER_MINUTE": "10"}
    with gunicorn_server(**env) as first, gunicorn_server(**env) as second:
        if time.time() % 60 > 50:  # keep all 15 requests inside one fixed window
            time.sleep(61 - time.time() % 60)
        redis.Redis.from_url(cache_url).flushdb()  # forget the readiness probes
        codes = [httpx.get(f"{(first, second)[i % 2]}/config").status_code for i in range(15)]
    assert codes == [200] * 10 + [429] * 5
