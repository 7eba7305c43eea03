import pytest

pytestmark = pytest.mark.django_db


def test_health_reports_each_dependency(anon_client):
    response = anon_client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok", "broker": "ok"}}


def test_health_names_a_failing_broker_with_503(anon_client, settings):
    from config.celery import app

    original = app.conf.broker_url, app.conf.broker_write_url
    app.conf.broker_url = app.conf.broker_write_url = "redis://127.0.0.1:1/0"
    try:
        response = anon_client.get("/health")
    finally:
        app.conf.broker_url, app.conf.broker_write_url = original
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == "error"
    assert response.json()["failing"] == ["broker"]


def test_config_reflects_the_running_configuration(anon_client, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.SIGNUPS_DISABLED = True
    settings.PUBLIC_URL = "https://mail.example.test"
    body = anon_client.get("/config").json()
    assert body["urls"]["public"] == "https://mail.example.test"
    assert body["features"]["smtp"] == {"enabled": True}
    assert body["features"]["email"]["provider"] == "smtp"
    assert body["features"]["signup"] == {"signupsDisabled": True}

    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
    settings.SIGNUPS_DISABLED = False
    body = anon_client.get("/config").json()
    assert body["features"]["email"]["provider"] == "postmark"
    assert body["features"]["smtp"] == {"enabled": False}
    assert body["features"]["signup"] == {"signupsDisabled": False}


@pytest.mark.urls("config.tests.probe_urls")
def test_openapi_schema_and_docs_are_served(anon_client):
    schema = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    document = schema.json()
    assert {"secretKey", "publicKey"} <= set(document["components"]["securitySchemes"])
    assert "ErrorEnvelope" in document["components"]["schemas"]
    assert anon_client.get("/api/docs/").status_code == 200
