import pytest

from accounts.models import Job

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


def _error(response):
    body = response.json()
    assert set(body) == {"success", "error", "timestamp"}
    assert body["success"] is False
    assert body["timestamp"].endswith("Z")
    assert body["error"]["statusCode"] == response.status_code
    return body["error"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("{not json", "application/json"),
        ("[1, 2]", "application/json"),
        ('"a string"', "application/json"),
        ("null", "application/json"),
        ("name=x", "text/plain"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400(secret_client, body, content_type):
    response = secret_client.post("/probe/write", body, content_type=content_type)
    assert response.status_code == 400
    assert _error(response)["code"] == "INVALID_REQUEST_BODY"
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field", "code", "received"),
    [
        ({}, "name", "invalid_type", "undefined"),
        ({"name": 5}, "name", "invalid_type", None),
        ({"name": "x" * 11}, "name", "too_big", None),
        ({"name": ""}, "name", "too_small", None),
        ({"name": "x", "email": "nope"}, "email", "invalid_string", None),
        ({"name": "x", "count": 0}, "count", "too_small", None),
        ({"name": "x", "count": "many"}, "count", "invalid_type", "string"),
        ({"name": "x", "kind": "c"}, "kind", "invalid_enum_value", None),
        ({"name": "x", "tags": ["a@b.test", "bad"]}, "tags.1", "invalid_string", None),
        ({"name": "x", "tags": "a@b.test"}, "tags", "invalid_type", "string"),
    ],
)
def test_validation_errors_name_the_field_with_a_stable_code(secret_client, body, field, code, received):
    response = secret_client.post("/probe/write", body, format="json")
    assert response.status_code == 422
    error = _error(response)
    assert error["code"] == "VALIDATION_ERROR"
    entry = error["errors"][0]
    assert (entry["field"], entry["code"]) == (field, code)
    assert field in error["message"]
    if received is not None:
        assert entry["received"] == received
    assert Job.objects.count() == 0


def test_unknown_route_and_wrong_method_get_the_envelope(secret_client):
    response = secret_client.get("/no/such/route")
    assert response.status_code == 404
    assert _error(response)["code"] == "RESOURCE_NOT_FOUND"
    response = secret_client.delete("/probe/secret")
    assert response.status_code == 405
    assert _error(response)["code"] == "METHOD_NOT_ALLOWED"
    assert "GET" in response["Allow"]


def test_an_unexpected_error_is_a_500_envelope_without_a_trace_and_writes_nothing(secret_client):
    response = secret_client.post("/probe/write", {"name": "x", "status": 500}, format="json")
    assert response.status_code == 500
    error = _error(response)
    assert error["code"] == "INTERNAL_SERVER_ERROR"
    assert "Traceback" not in response.content.decode()
    assert "asked to crash" not in response.content.decode()
    assert Job.objects.count() == 0


def test_an_oversized_body_is_413(secret_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = secret_client.post("/probe/write", {"name": "x" * 2000}, format="json")
    assert response.status_code == 413
    assert _error(response)["code"] == "PAYLOAD_TOO_LARGE"


def test_every_response_carries_a_request_id_and_a_caller_id_is_kept(secret_client):
    first = secret_client.get("/probe/secret")
    second = secret_client.get("/probe/secret")
    assert first["X-Request-Id"] != second["X-Request-Id"]
    traced = secret_client.get("/no/route", HTTP_X_REQUEST_ID="trace-12345678")
    assert traced["X-Request-Id"] == "trace-12345678"
    assert traced.json()["error"]["requestId"] == "trace-12345678"
    injected = secret_client.get("/probe/secret", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert injected["X-Request-Id"] != "bad id\nwith newline"


def test_log_lines_carry_the_request_id(secret_client, caplog):
    from core.http.middleware import RequestIdLogFilter

    caplog.handler.addFilter(RequestIdLogFilter())
    with caplog.at_level("ERROR"):
        response = secret_client.post("/probe/write", {"name": "x", "status": 500}, format="json")
    records = [record for record in caplog.records if record.name == "core.http.exceptions"]
    assert records and records[0].request_id == response["X-Request-Id"]
