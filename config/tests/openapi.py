"""An answer checked against the published OpenAPI schema, as a client generated from that schema reads it."""

from functools import cache

import requests
import schemathesis
from django.test import Client
from schemathesis.core.transport import Response


@cache
def published_schema() -> dict:
    """The OpenAPI document /api/schema/ serves."""
    # Through Django's test client, which leaves the test's database connection open (a WSGI call would close it).
    return Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


@cache
def _schema():
    return schemathesis.openapi.from_dict(published_schema())


def assert_documented(response, *, method: str, path: str, template: str) -> None:
    """`response` (of Django's test client) to `method path` is a status and a body that the schema of the
    operation at `template` (`/contacts/bulk/{job_id}`) lists and describes: an AssertionError for a status it does
    not list, schemathesis' failures for a body it does not describe."""
    answer = Response(
        status_code=response.status_code,
        headers={name: [value] for name, value in response.headers.items()},
        content=response.content,
        request=requests.Request(method, f"http://localhost{path}").prepare(),
        elapsed=0.0,
        verify=False,
    )
    documented = published_schema()["paths"][template][method.lower()]["responses"]
    assert str(response.status_code) in documented, f"{method} {template} does not document {response.status_code}"
    _schema()[template][method].validate_response(answer)
