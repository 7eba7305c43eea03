"""Production configuration: a shared secret is required, secrets rotate without breaking what was signed or
encrypted, HTTPS settings follow the proxy, the documented configuration passes `check --deploy`, operators'
pages can be kept to one host and their logins are throttled."""

import secrets
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

PRODUCTION = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "DEBUG": "false",
    "PUBLIC_URL": "https://mail.example.test",
    "ALLOWED_HOSTS": "mail.example.test",
    "TRUSTED_PROXY_COUNT": "1",
}


def run(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=settings.BASE_DIR, env={**PRODUCTION, **env}, capture_output=True, text=True
    )


def python(code: str, *args: str, **env) -> str:
    out = run(
        ["-c", "import django; django.setup(); " + code, *args], DJANGO_SETTINGS_MODULE="config.settings.base", **env
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_production_refuses_to_start_without_a_secret_key():
    out = run(["manage.py", "check"])
    assert out.returncode != 0
    # One line naming the setting and the fix, not a traceback.
    assert out.stderr.startswith("Configuration error: SECRET_KEY is not set.") and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "DEBUG=true" in out.stderr


def test_the_documented_production_configuration_passes_check_deploy_without_warnings():
    out = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], SECRET_KEY=secrets.token_urlsafe(50))
    assert out.returncode == 0, out.stdout + out.stderr


def test_behind_an_https_proxy_http_is_redirected_and_hsts_sent():
    code = "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS)"
    assert python(code, SECRET_KEY=secrets.token_urlsafe(50)) == "True 31536000"
    assert python(code, SECRET_KEY=secrets.token_urlsafe(50), TRUSTED_PROXY_COUNT="0") == "False 0"
    assert python(code, SECRET_KEY=secrets.token_urlsafe(50), SECURE_HSTS_SECONDS="600") == "True 600"


def test_links_signed_under_a_rotated_secret_keep_working():
    old, new = secrets.token_urlsafe(50), secrets.token_urlsafe(50)
    make = "from messaging.engagement.links import link_token; print(link_token(contact_id='c1', email_id='e1'))"
    token = python(make, SECRET_KEY=old)
    read = "import sys; from messaging.engagement.links import link_token_read; print(link_token_read(sys.argv[1]))"
    assert python(read, token, SECRET_KEY=new, SECRET_KEY_FALLBACKS=old) == "('c1', 'e1')"
    assert (
        "BadSignature"
        in run(
            ["-c", "import django; django.setup(); " + read, token],
            SECRET_KEY=new,
            DJANGO_SETTINGS_MODULE="config.settings.base",
        ).stderr
    )


def test_dkim_keys_survive_rotation_and_a_dedicated_encryption_key(settings):
    from domains.dkim import decrypt_private_key, generate_key_pair

    _, under_secret_key = generate_key_pair()
    pem = decrypt_private_key(under_secret_key)
    # A dedicated FIELD_ENCRYPTION_KEY: old keys (under SECRET_KEY) still decrypt, new ones use it.
    settings.FIELD_ENCRYPTION_KEY = secrets.token_urlsafe(50)
    assert decrypt_private_key(under_secret_key) == pem
    _, under_field_key = generate_key_pair()
    field_pem = decrypt_private_key(under_field_key)
    # Rotating SECRET_KEY (no fallbacks) no longer touches keys stored under FIELD_ENCRYPTION_KEY.
    settings.SECRET_KEY = secrets.token_urlsafe(50)
    assert decrypt_private_key(under_field_key) == field_pem


@pytest.mark.django_db
def test_operator_pages_answer_only_on_the_admin_host(settings):
    settings.ADMIN_HOST = "ops.internal"
    settings.ALLOWED_HOSTS = ["mail.example.test", "ops.internal"]
    client = Client()
    public = client.get("/admin/login/", HTTP_HOST="mail.example.test")
    assert public.status_code == 404
    assert public.json()["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert client.get("/admin/login/", HTTP_HOST="ops.internal").status_code == 200
    # Everything else still answers on the public host.
    assert client.get("/health", HTTP_HOST="mail.example.test").status_code == 200


@pytest.mark.django_db
def test_operator_pages_answer_only_inside_the_admin_networks_whatever_the_host_says(settings):
    # Behind one proxy: the client's address is the entry the proxy appends, the rightmost.
    settings.TRUSTED_PROXY_COUNT = 1
    settings.ADMIN_NETWORKS = ["10.20.0.0/16", "127.0.0.1/32"]
    settings.ADMIN_HOST = "ops.internal"
    settings.ALLOWED_HOSTS = ["mail.example.test", "ops.internal"]
    client = Client()

    def login_page(forwarded_for: str, host: str = "ops.internal"):
        return client.get("/admin/login/", HTTP_HOST=host, HTTP_X_FORWARDED_FOR=forwarded_for)

    # An outsider naming the admin's host (before ADMIN_NETWORKS, the Host header alone let it in), and one who
    # writes an inside address into X-Forwarded-For itself: the proxy's entry is still the outsider's.
    assert login_page("203.0.113.9").status_code == 404
    assert login_page("10.20.3.4, 203.0.113.9").status_code == 404
    assert login_page("not an address").status_code == 404
    assert login_page("10.20.3.4").status_code == 200
    # Inside the network but on the public name: the host rule still holds.
    assert login_page("10.20.3.4", host="mail.example.test").status_code == 404
    # The public API is not confined.
    assert client.get("/health", HTTP_HOST="mail.example.test", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 200


def test_admin_networks_must_be_networks_and_admin_host_alone_is_flagged(settings):
    from django.core.checks import run_checks

    out = run(
        ["-c", "import django; django.setup()"],
        ADMIN_NETWORKS="10.0.0.0/8,ops.internal",
        SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_SETTINGS_MODULE="config.settings.base",
    )
    assert out.returncode != 0
    assert "ADMIN_NETWORKS: 'ops.internal' is not a network" in out.stderr

    settings.ADMIN_HOST, settings.ADMIN_NETWORKS = "ops.internal", []
    assert "herald.W005" in [message.id for message in run_checks(include_deployment_checks=True)]
    settings.ADMIN_NETWORKS = ["10.0.0.0/8"]
    assert "herald.W005" not in [message.id for message in run_checks(include_deployment_checks=True)]


@pytest.mark.django_db
def test_admin_logins_are_locked_out_after_repeated_failures(settings):
    from accounts.models import User

    User.objects.create_superuser(email="root@example.test", password="the-right-password")
    client = Client()

    def login(password: str):
        return client.post("/admin/login/?next=/admin/", {"username": "root@example.test", "password": password})

    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login("wrong").status_code == 200  # the form again, with its error
    assert login("wrong").status_code == 429
    # Locked: even the right password is refused now, from this address.
    assert login("the-right-password").status_code == 429
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_a_correct_admin_login_still_works():
    from accounts.models import User

    User.objects.create_superuser(email="root@example.test", password="the-right-password")
    client = Client()
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root@example.test", "password": "the-right-password"}
    )
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
def test_health_is_not_limited_per_address(settings, anon_client):
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    assert [anon_client.get("/health").status_code for _ in range(5)] == [200] * 5
    # Other unauthenticated endpoints still are.
    assert [anon_client.get("/config").status_code for _ in range(3)][-1] == 429
