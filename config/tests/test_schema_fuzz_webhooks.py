"""Bodies generated from the published schema, sent to the provider webhooks of an instance that has their
credentials, with valid credentials: past the authentication, into the providers' parsers and the feedback service.
Whatever the body, the answer is one the operation documents (processed, or 400 for a body that cannot be read),
never a 500. (The general fuzz test, `test_schema_fuzz.py`, reaches only the refusal of an unconfigured provider.)"""

import base64
import hashlib
import hmac
import json
import time

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.core import NOT_SET

from config.tests.openapi import assert_documented
from config.tests.wsgi import keeping_the_test_connection
from config.wsgi import application

SECRET = "generic-secret"
BASIC = "Basic " + base64.b64encode(b"hook:secret").decode()

# SES is left out: its signature is checked against the certificate of an SNS host on the internet.
schema = schemathesis.openapi.from_wsgi("/api/schema/", application).include(
    path_regex="^/webhooks/(postmark|mailgun|brevo|sparkpost|resend|generic)$"
)


@pytest.fixture(autouse=True)
def _configured(db, settings):
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": ["hook:secret"], "MAILGUN_WEBHOOK_SIGNING_KEY": "k"}
    settings.FEEDBACK_GENERIC_SECRET = SECRET
    with keeping_the_test_connection():
        yield


def _signed(body: bytes) -> dict:
    timestamp = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"X-Herald-Timestamp": timestamp, "X-Herald-Signature": f"v1={digest}"}


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_an_authenticated_webhook_answers_a_generated_body_as_documented(case, client):
    # As sent: JSON, the bytes of another media type, or (a negative case) no body at all.
    if case.body is NOT_SET:
        body = b""
    else:
        body = case.body if isinstance(case.body, bytes) else json.dumps(case.body).encode()
    headers = _signed(body) if case.path == "/webhooks/generic" else {"Authorization": BASIC}
    response = client.post(case.path, data=body, content_type=case.media_type or "application/json", headers=headers)
    assert response.status_code < 500
    assert_documented(response, method="POST", path=case.path, template=case.path)
