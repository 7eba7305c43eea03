"""Requests generated from the OpenAPI schema, sent over HTTP to a served instance as in production (gunicorn on
PostgreSQL and Redis, a real Celery worker delivering what is sent): no answer is a 5xx and none takes 2 s or more.

CI runs a few examples per operation (`FUZZ_EXAMPLES`, default 10; 0 skips it); a full run is

    FUZZ_EXAMPLES=250 DATABASE_URL=postgres://postgres@127.0.0.1:5432/test CACHE_URL=redis://127.0.0.1:6379/1 \\
        CELERY_BROKER_URL=redis://127.0.0.1:6379/2 .venv/bin/pytest config/tests/test_schema_fuzz_served.py

(docs/operations.md records one).
"""

import json
import os

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.db import connection
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from config.tests.processes import celery_worker, gunicorn_server

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
SLOWEST_SECONDS = 2.0
pytestmark = [
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(EXAMPLES == 0, reason="FUZZ_EXAMPLES=0"),
]


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker):
    if connection.vendor != "postgresql" or not django_settings.CACHES["default"]["BACKEND"].endswith("RedisCache"):
        pytest.skip("a served instance as in production needs PostgreSQL and Redis")
    with django_db_blocker.unblock():
        from conftest import make_persona

        persona = make_persona("Fuzz", "fuzz@example.test", verified_domains=("fuzz.test",))
    env = {"API_RATE_LIMIT_PER_MINUTE": "0", "CACHE_URL": django_settings.CACHES["default"]["LOCATION"]}
    with (
        celery_worker(**env, EMAIL_URL="django.core.mail.backends.locmem.EmailBackend"),
        gunicorn_server(workers=2, **env) as base,
    ):
        yield base, persona
    with django_db_blocker.unblock():
        persona.project.delete()


def _published_schema() -> dict:
    """The document the served instance publishes at /api/schema/, built in this process."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    return json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))


# Loaded as a document, not as an application: the cases go over HTTP to the served instance.
schema = schemathesis.openapi.from_dict(_published_schema())


@schema.parametrize()
@settings(max_examples=max(EXAMPLES, 1), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_a_served_instance_never_answers_5xx_nor_slowly(case, served):
    base, persona = served
    key = persona.keys.public_key if case.path == "/v1/track" else persona.keys.secret_key
    response = case.call(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    assert response.elapsed < SLOWEST_SECONDS, f"{case.method} {case.formatted_path} took {response.elapsed:.2f} s"
