import pytest

from accounts.models import Job

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


@pytest.fixture
def limit_of_5(settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 5


def test_headers_count_down_and_request_over_the_limit_is_429(limit_of_5, secret_client):
    remaining = []
    for _ in range(5):
        response = secret_client.get("/probe/secret")
        assert response.status_code == 200
        assert response["RateLimit-Limit"] == "5"
        assert 1 <= int(response["RateLimit-Reset"]) <= 60
        remaining.append(int(response["RateLimit-Remaining"]))
    assert remaining == [4, 3, 2, 1, 0]
    response = secret_client.get("/probe/secret")
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "RATE_LIMIT_EXCEEDED"
    assert int(response["Retry-After"]) == error["details"]["retryAfter"] >= 1
    assert response["RateLimit-Remaining"] == "0"


def test_a_limited_request_writes_nothing(limit_of_5, secret_client):
    for _ in range(5):
        secret_client.get("/probe/secret")
    response = secret_client.post("/probe/write", {"name": "x"}, format="json")
    assert response.status_code == 429
    assert Job.objects.count() == 0


def test_projects_are_counted_apart_and_both_keys_share_one_budget(
    limit_of_5, secret_client, public_client, other_client
):
    for _ in range(4):
        assert secret_client.get("/probe/secret").status_code == 200
    assert public_client.post("/probe/public", {}, format="json").status_code == 200
    assert secret_client.get("/probe/secret").status_code == 429
    assert other_client.get("/probe/secret").status_code == 200


def test_unknown_keys_are_limited_per_client_address(limit_of_5, anon_client):
    codes = [anon_client.get("/probe/secret", HTTP_AUTHORIZATION=f"Bearer sk_{i:064x}").status_code for i in range(6)]
    assert codes == [401] * 5 + [429]
    elsewhere = anon_client.get("/probe/secret", HTTP_AUTHORIZATION="Bearer x", REMOTE_ADDR="10.9.9.9")
    assert elsewhere.status_code == 401


def test_zero_turns_the_limit_off(settings, secret_client):
    settings.API_RATE_LIMIT_PER_MINUTE = 0
    for _ in range(3):
        response = secret_client.get("/probe/secret")
        assert response.status_code == 200
        assert "RateLimit-Limit" not in response


def test_an_unreachable_cache_lets_requests_through(settings, secret_client):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    from django.core.cache import caches

    caches._settings = None
    try:
        caches["default"] = caches.create_connection("default")
        assert secret_client.get("/probe/secret").status_code == 200
    finally:
        del caches["default"]
