import json
import time
import uuid
from contextlib import contextmanager

import pytest
from redis.commands.core import CoreCommands

from accounts.models import Job
from accounts.tenancy.keys import KeyKind
from accounts.tenancy.selectors import api_key_lookup
from core import ratelimit
from core.cache import redis_client
from core.ratelimit import WINDOW_SECONDS, Window, project_scope, rate_limit_hit

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


@pytest.fixture
def limit_of_5(settings, one_rate_window):
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


def test_projects_and_key_kinds_are_counted_apart(limit_of_5, secret_client, public_client, other_client):
    """The public key is published in web pages: its calls cannot use up the secret key's budget (the previous
    code counted both in one budget, and this test's secret calls got 429)."""
    for _ in range(5):
        assert public_client.post("/probe/public", {}, format="json").status_code == 200
    assert public_client.post("/probe/public", {}, format="json").status_code == 429
    for _ in range(5):
        assert secret_client.get("/probe/secret").status_code == 200
    assert secret_client.get("/probe/secret").status_code == 429
    assert other_client.get("/probe/secret").status_code == 200


def test_the_fast_route_counts_the_public_key_apart(limit_of_5, project):
    from config.tests.wsgi import wsgi_call

    track = {"email": "a@example.com", "event": "signup"}
    headers = {"Authorization": f"Bearer {project.keys.public_key}", "Content-Type": "application/json"}
    codes = [wsgi_call("POST", "/v1/track", body=json.dumps(track).encode(), headers=headers).status for _ in range(6)]
    assert codes == [200] * 5 + [429]
    secret = {"Authorization": f"Bearer {project.keys.secret_key}"}
    assert wsgi_call("GET", "/contacts", headers=secret).status == 200


@pytest.mark.parametrize("served", [False, True])
def test_public_key_calls_can_be_limited_per_client_address(
    served, settings, project, public_client, secret_client, one_rate_window
):
    """Off by default; when set, one visitor cannot spend the page's budget: others on the same key go on, and
    the secret key is not counted per address at all."""
    from config.tests.wsgi import wsgi_call

    settings.API_RATE_LIMIT_PER_MINUTE = 100
    settings.PUBLIC_KEY_RATE_LIMIT_PER_ADDRESS_PER_MINUTE = 3
    track = {"email": "a@example.com", "event": "signup"}

    def call(address):
        if not served:
            return public_client.post("/v1/track", track, format="json", REMOTE_ADDR=address)
        headers = {"Authorization": f"Bearer {project.keys.public_key}", "Content-Type": "application/json"}
        return wsgi_call("POST", "/v1/track", body=json.dumps(track).encode(), headers=headers, remote_addr=address)

    def header(response, name):
        return response[name] if not served else response.headers[name]

    codes = [call("10.0.0.1").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = call("10.0.0.1")
    assert refused.json()["error"]["message"].startswith("Rate limit of 3 requests per minute from one client")
    assert header(refused, "RateLimit-Limit") == "3" and header(refused, "RateLimit-Remaining") == "0"
    assert call("10.0.0.2").status_code == 200
    assert all(secret_client.get("/probe/secret").status_code == 200 for _ in range(5))


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


# Commands Redis 6.2 does not have (README.md: Redis 6.2 or later), and the expiry commands whose NX/XX/GT/LT options
# came with Redis 7.0. Sent to a Redis 6, they fail, and the rate limit takes a failure for an unreachable cache.
REDIS_7_COMMANDS = {"EXPIRETIME", "PEXPIRETIME", "LMPOP", "BLMPOP", "ZMPOP", "BZMPOP", "SINTERCARD", "ZINTERCARD"}
REDIS_7_COMMANDS |= {"FUNCTION", "FCALL", "FCALL_RO", "EVAL_RO", "EVALSHA_RO", "SORT_RO"}
EXPIRY_COMMANDS = {"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"}


def needs_redis_7(command) -> bool:
    name = str(command[0]).upper()
    return name in REDIS_7_COMMANDS or (name in EXPIRY_COMMANDS and len(command) > 3)


def within_one_window() -> None:
    if time.time() % WINDOW_SECONDS > WINDOW_SECONDS - 3:
        time.sleep(WINDOW_SECONDS + 0.1 - time.time() % WINDOW_SECONDS)


@contextmanager
def commands_run(cache):
    """Every command Redis runs meanwhile on the cache's database, those of Lua scripts included (MONITOR)."""
    client = redis_client(cache)
    db = client.connection_pool.connection_kwargs.get("db", 0)
    seen = []
    with client.monitor() as monitor:
        yield seen
        marker = f"end-of-test-{uuid.uuid4().hex}"
        client.echo(marker)
        for info in monitor.listen():
            if marker in info["command"]:
                break
            if info["db"] == db:
                seen.append(info["command"].split(" "))


def test_the_count_in_redis_never_passes_the_limit(redis_cache, limit_of_5, project, secret_client, settings):
    settings.API_KEY_CACHE_SECONDS = 300
    within_one_window()
    remaining = [int(secret_client.get("/probe/secret")["RateLimit-Remaining"]) for _ in range(5)]
    assert remaining == [4, 3, 2, 1, 0]
    assert secret_client.get("/probe/secret").status_code == 429
    # The key lookup of the fast routes counts in the same window, in the same round trip as the lookup.
    window = Window.now()
    assert api_key_lookup(token=project.keys.secret_key, window=window) is not None
    assert window.count == 7 and window.state().exceeded
    counter = redis_cache.make_and_validate_key(window.key(project_scope(project.id, KeyKind.SECRET)))
    assert 0 < redis_client(redis_cache).ttl(counter) <= window.timeout


def test_no_command_sent_to_redis_needs_redis_7(redis_cache, limit_of_5, project, settings):
    settings.API_KEY_CACHE_SECONDS = 300
    api_key_lookup(token=project.keys.secret_key)  # now in the key cache
    window = Window.now()
    with commands_run(redis_cache) as commands:
        rate_limit_hit(project_scope(project.id, KeyKind.SECRET))
        api_key_lookup(token=project.keys.secret_key, window=window)
    counter = redis_cache.make_and_validate_key(window.key(project_scope(project.id, KeyKind.SECRET)))
    counting = [command for command in commands if counter in command]
    assert [command[0].upper() for command in counting] == ["INCRBY", "EXPIRE", "INCR", "EXPIRE"]
    assert [command for command in commands if needs_redis_7(command)] == []


class RecordingRedis:
    """Stands in for the cache's Redis client: records every command as redis-py spells it, and counts."""

    def __init__(self):
        self.commands, self.counts = [], {}

    def pipeline(self, transaction=True):
        return RecordingPipeline(self)


class RecordingPipeline(CoreCommands):
    def __init__(self, server):
        self.server, self.stack = server, []

    def execute_command(self, *args, **options):
        self.stack.append(args)
        return self

    def execute(self):
        results = []
        for name, key, *args in self.stack:
            if name in ("INCR", "INCRBY"):
                self.server.counts[key] = self.server.counts.get(key, 0) + int(args[0] if args else 1)
            results.append(self.server.counts.get(key, True))
        self.server.commands += self.stack
        return results


def test_the_counting_pipeline_needs_nothing_of_redis_7(monkeypatch, limit_of_5):
    server = RecordingRedis()
    monkeypatch.setattr(ratelimit, "redis_client", lambda cache: server)
    within_one_window()
    states = [rate_limit_hit("ip:192.0.2.1") for _ in range(6)]
    assert [state.remaining for state in states] == [4, 3, 2, 1, 0, 0] and states[-1].exceeded
    assert server.commands and [command for command in server.commands if needs_redis_7(command)] == []
    assert {command[0] for command in server.commands} == {"INCRBY", "EXPIRE"}
