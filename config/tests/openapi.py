"""An answer checked against the published OpenAPI schema, as a client generated from that schema reads it."""

from functools import cache

import requests
import schemathesis
from schemathesis.core.transport import Response


@cache
def _schema():
    from config.wsgi import application

    return schemathesis.openapi.from_wsgi("/api/schema/", application)


def assert_documented(response, *, method: str, path: str, template: str) -> None:
    """`response` (of Django's test client) to `method path` is a status and a body that the schema of the
    operation at `template` (`/contacts/bulk/{job_id}`) describes; raises schemathesis' failures otherwise."""
    answer = Response(
        status_code=response.status_code,
        headers={name: [value] for name, value in response.headers.items()},
        content=response.content,
        request=requests.Request(method, f"http://localhost{path}").prepare(),
        elapsed=0.0,
        verify=False,
    )
    _schema()[template][method].validate_response(answer)
