"""Settings come from the environment: each case starts a fresh interpreter with the variables set."""

import json
import subprocess
import sys

import pytest
from django.conf import settings

PROBE = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'db': s.DATABASES['default']['ENGINE'], 'cache': s.CACHES['default']['BACKEND'], "
    "'email': s.EMAIL_BACKEND, 'host': getattr(s, 'EMAIL_HOST', None), 'port': getattr(s, 'EMAIL_PORT', None), "
    "'broker': s.CELERY_BROKER_URL, 'dns': s.DNS_NAMESERVERS, 'limit': s.API_RATE_LIMIT_PER_MINUTE, "
    "'ttl': s.IDEMPOTENCY_KEY_TTL_HOURS, 'outbox': str(getattr(s, 'EMAIL_FILE_PATH', ''))}))"
)


def _run(code: str, **env) -> subprocess.CompletedProcess:
    """`code` run in a fresh interpreter with the base settings and the variables `env`."""
    base = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "HOME": "/tmp",
        "SECRET_KEY": settings.SECRET_KEY,
    }
    return subprocess.run(
        [sys.executable, "-c", code], cwd=settings.BASE_DIR, env={**base, **env}, capture_output=True, text=True
    )


def fresh_interpreter(code: str, **env) -> str:
    """The last line `code` printed, run in a fresh interpreter with the base settings and the variables `env`."""
    out = _run(code, **env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def refused_start(**env) -> str:
    """What Django's start wrote as it failed with the base settings and the variables `env`."""
    out = _run("import django; django.setup()", **env)
    assert out.returncode != 0
    return out.stderr


def settings_with(**env):
    return json.loads(fresh_interpreter(PROBE, **env))


def test_embedded_defaults_need_no_server():
    values = settings_with()
    assert values["db"] == "django.db.backends.sqlite3"
    assert values["cache"] == "django.core.cache.backends.locmem.LocMemCache"
    assert values["email"] == "messaging.sending.outbox.EmailBackend"
    assert values["broker"] == "filesystem://localhost/"
    assert (values["dns"], values["limit"], values["ttl"]) == ([], 1000, 24)
    # Where the README says to look (django-environ alone made it relative to the working directory).
    assert values["outbox"] == str(settings.BASE_DIR / "var" / "outbox")


def test_a_file_outbox_is_the_folder_the_url_names():
    assert settings_with(EMAIL_URL="filemail:///srv/mail/outbox")["outbox"] == "/srv/mail/outbox"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"EMAIL_URL": "smtp://127.0.0.1:2525"},
            {"email": "django.core.mail.backends.smtp.EmailBackend", "host": "127.0.0.1", "port": 2525},
        ),
        ({"EMAIL_URL": "anymail.backends.postmark.EmailBackend"}, {"email": "anymail.backends.postmark.EmailBackend"}),
        ({"DATABASE_URL": "postgres://u@db:5432/x"}, {"db": "django.db.backends.postgresql"}),
        ({"CACHE_URL": "redis://127.0.0.1:6379/3"}, {"cache": "django.core.cache.backends.redis.RedisCache"}),
        ({"DNS_NAMESERVERS": "127.0.0.1:5353,10.0.0.2"}, {"dns": ["127.0.0.1:5353", "10.0.0.2"]}),
        ({"API_RATE_LIMIT_PER_MINUTE": "50", "IDEMPOTENCY_KEY_TTL_HOURS": "2"}, {"limit": 50, "ttl": 2}),
    ],
)
def test_environment_variables_configure_the_service(env, expected):
    values = settings_with(**env)
    assert {key: values[key] for key in expected} == expected


def test_production_warnings_name_the_unsafe_settings():
    out = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=settings.BASE_DIR,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "DEBUG": "false",
            "PUBLIC_URL": "http://mail.example.test",
            "SECRET_KEY": settings.SECRET_KEY,
        },
        capture_output=True,
        text=True,
    )
    assert "herald.W001" in out.stderr + out.stdout


@pytest.mark.parametrize(
    ("lease", "timeout", "expected"),
    [(120, 30, []), (60, 30, ["herald.W003"]), (300, 30, ["herald.W004"]), (30, None, [])],
)
def test_the_delivery_lease_is_checked_against_the_smtp_timeout_and_the_take_over_time(
    settings, lease, timeout, expected
):
    from django.core.checks import run_checks

    settings.DELIVERY_LEASE_SECONDS, settings.EMAIL_TIMEOUT = lease, timeout
    assert [message.id for message in run_checks() if message.id in ("herald.W003", "herald.W004")] == expected


def test_an_unknown_log_format_stops_the_start_naming_the_setting():
    assert "LOG_FORMAT must be plain or json, not 'xml'" in refused_start(LOG_FORMAT="xml")


def test_a_replica_url_adds_a_replica_with_the_primarys_connection_settings():
    probe = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({alias: {k: db.get(k) for k in ('HOST', 'PORT', 'CONN_MAX_AGE', 'CONN_HEALTH_CHECKS', "
        "'OPTIONS')} for alias, db in s.DATABASES.items()} | {'routers': s.DATABASE_ROUTERS}))"
    )
    primary_only = json.loads(fresh_interpreter(probe, DATABASE_URL="postgres://herald@db.internal:5432/herald"))
    assert list(primary_only) == ["default", "routers"] and primary_only["routers"] == []
    databases = json.loads(
        fresh_interpreter(
            probe,
            DATABASE_URL="postgres://herald@db.internal:5432/herald",
            DATABASE_REPLICA_URL="postgres://herald@db-replica.internal:5433/herald",
            DATABASE_CONN_MAX_AGE="30",
            DATABASE_SERVER_SIDE_BINDING="false",
        )
    )
    default, replica = databases["default"], databases["replica"]
    assert databases["routers"] == ["core.replica.ReplicaRouter"]
    assert (replica["HOST"], replica["PORT"]) == ("db-replica.internal", 5433)
    assert replica["CONN_MAX_AGE"] == default["CONN_MAX_AGE"] == 30
    assert "server_side_binding" not in replica["OPTIONS"] and "server_side_binding" not in default["OPTIONS"]
    # A dead replica is found by the health check of a request's first replica read, within seconds.
    assert replica["CONN_HEALTH_CHECKS"] is True and replica["OPTIONS"]["connect_timeout"] == 3
    with_binding = json.loads(
        fresh_interpreter(
            probe,
            DATABASE_URL="postgres://herald@db.internal:5432/herald",
            DATABASE_REPLICA_URL="postgres://herald@db-replica.internal:5433/herald",
        )
    )
    assert with_binding["replica"]["OPTIONS"]["server_side_binding"] is True
    assert with_binding["replica"]["OPTIONS"]["options"] == with_binding["default"]["OPTIONS"]["options"]


@pytest.mark.parametrize(("lease", "retry"), [("30", "20"), ("10", "0")])
def test_a_beat_retry_interval_that_would_let_the_lease_lapse_stops_the_start(lease, retry):
    """The leader renews its lease every retry interval: above half the lease, one renewal missed lets it lapse; at 0
    the beats would spin."""
    refused = refused_start(BEAT_LEASE_SECONDS=lease, BEAT_LEASE_RETRY_SECONDS=retry)
    assert "BEAT_LEASE_RETRY_SECONDS must be above 0 and at most half of BEAT_LEASE_SECONDS" in refused
