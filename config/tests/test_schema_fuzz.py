"""Requests generated from the OpenAPI schema (schemathesis), sent to the application gunicorn serves: whatever the
input, every operation answers with a success or the error envelope, never a 500, with a status the schema documents
and a body its schema describes: a client generated from the published schema is not surprised. (This found
`OPTIONS` answering 500 on every viewset, and 33 operations whose schema left out statuses they answer, parameter
minimums, the bare `{error}` of two creates, and the page envelopes.)"""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance, status_code_conformance

from config.tests.wsgi import keeping_the_test_connection
from config.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture(autouse=True)
def _served_as_in_production(db, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 0
    with keeping_the_test_connection():
        yield


@schema.parametrize()
@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_generated_requests_get_a_documented_answer_never_a_server_error(case, project):
    key = project.keys.public_key if case.path == "/v1/track" else project.keys.secret_key
    case.call_and_validate(
        headers={"Authorization": f"Bearer {key}"},
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )
