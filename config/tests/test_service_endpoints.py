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


FEATURE_SETTINGS = [
    # (settings that turn the feature on, the flag's path, its value then)
    ({"STRIPE_SECRET_KEY": "sk_test_1", "STRIPE_PRICE_ID": "price_1"}, ("billing", "enabled"), True),
    ({"AWS_STORAGE_BUCKET_NAME": "herald-images"}, ("storage", "s3Enabled"), True),
    ({"GITHUB_CLIENT_ID": "gh-client", "GITHUB_CLIENT_SECRET": "gh-secret"}, ("authProviders", "github"), True),
    ({"GOOGLE_CLIENT_ID": "google-client", "GOOGLE_CLIENT_SECRET": "g-secret"}, ("authProviders", "google"), True),
    ({"SIGNUPS_DISABLED": True}, ("signup", "signupsDisabled"), True),
    ({"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"}, ("smtp", "enabled"), True),
    ({"TRACKING_TOGGLE_ENABLED": False}, ("email", "trackingToggleEnabled"), False),
]
FEATURES_OFF = {
    "STRIPE_SECRET_KEY": "",
    "STRIPE_PRICE_ID": "",
    "AWS_STORAGE_BUCKET_NAME": "",
    "GITHUB_CLIENT_ID": "",
    "GITHUB_CLIENT_SECRET": "",
    "GOOGLE_CLIENT_ID": "",
    "GOOGLE_CLIENT_SECRET": "",
    "SIGNUPS_DISABLED": False,
    "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
    "TRACKING_TOGGLE_ENABLED": True,
}


@pytest.mark.parametrize(("turned_on", "path", "value"), FEATURE_SETTINGS)
def test_each_flag_follows_the_setting_that_turns_its_feature_on(anon_client, settings, turned_on, path, value):
    for name, off in FEATURES_OFF.items():
        setattr(settings, name, off)
    before = anon_client.get("/config").json()["features"]
    assert before[path[0]][path[1]] is (not value)
    for name, on in turned_on.items():
        setattr(settings, name, on)
    after = anon_client.get("/config").json()["features"]
    assert after[path[0]][path[1]] is value
    # Only that flag moved.
    after[path[0]][path[1]] = before[path[0]][path[1]]
    assert after == before or path == ("smtp", "enabled")


def test_billing_needs_both_the_key_and_the_price(anon_client, settings):
    settings.STRIPE_SECRET_KEY, settings.STRIPE_PRICE_ID = "sk_test_1", ""
    assert anon_client.get("/config").json()["features"]["billing"] == {"enabled": False}


@pytest.mark.urls("config.tests.probe_urls")
def test_openapi_schema_and_docs_are_served(anon_client):
    schema = anon_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    document = schema.json()
    assert {"secretKey", "publicKey"} <= set(document["components"]["securitySchemes"])
    assert "ErrorEnvelope" in document["components"]["schemas"]
    assert anon_client.get("/api/docs/").status_code == 200
