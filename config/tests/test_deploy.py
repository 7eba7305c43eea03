"""deploy/ agrees with the service: the nginx site's body limit is the service's own and it forwards the headers
TRUSTED_PROXY_COUNT=1 reads; the units start the processes the way the README does, and every place that starts
the one-host default starts its workers alike. (CI also runs `deploy/check.sh`: systemd-analyze verify and nginx -t.)"""

import re
from pathlib import Path

from django.conf import settings

from config.devrun import dev_processes
from config.queues import DELIVERY, QUEUES

ROOT = Path(settings.BASE_DIR)
DEPLOY = ROOT / "deploy"


def test_nginx_body_limit_and_proxy_headers_match_the_service():
    site = (DEPLOY / "nginx" / "herald.conf").read_text()
    limit = re.search(r"client_max_body_size (\d+)m;", site)
    assert limit and int(limit.group(1)) * 1024 * 1024 == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    # One proxy appends the client's address, the rightmost entry: what TRUSTED_PROXY_COUNT=1 reads.
    assert "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;" in site
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in site
    assert "proxy_set_header Host $host;" in site


def test_nginx_forwards_only_its_own_host_name_and_never_the_admin():
    site = (DEPLOY / "nginx" / "herald.conf").read_text()
    servers = re.findall(r"^server \{.*?^\}", site, flags=re.S | re.M)
    catch_all = [server for server in servers if "default_server" in server]
    # Other names on both ports end there, refused, so `Host: <ADMIN_HOST>` never reaches the service.
    assert len(catch_all) == 2 and all("return 444;" in server and "proxy_pass" not in server for server in catch_all)
    (public,) = [server for server in servers if "proxy_pass" in server]
    assert "server_name mail.example.com;" in public
    assert re.search(r"location /admin/ \{\s*return 404;\s*\}", public)


def test_units_start_web_worker_beat_and_smtp():
    units = {path.stem: path.read_text() for path in (DEPLOY / "systemd").glob("*.service")}
    assert set(units) == {"herald-web", "herald-worker", "herald-delivery", "herald-beat", "herald-smtp"}
    assert "gunicorn -c config/gunicorn.py config.wsgi" in units["herald-web"]
    assert "celery -A config worker" in units["herald-worker"] and "celery -A config worker" in units["herald-delivery"]
    assert "celery -A config beat" in units["herald-beat"]
    assert "manage.py smtp_server" in units["herald-smtp"]
    assert all("Restart=always" in unit and "EnvironmentFile=" in unit for unit in units.values())


def _workers(text: str) -> list[list[str]]:
    """The queues of each Celery worker `text` starts, in order; [""] for a worker started without `-Q`."""
    commands = re.findall(r'celery"? -A config worker([^\n]*)', text)
    return sorted(sorted(",".join(re.findall(r"(?:-Q|--queues) (\S+)", options)).split(",")) for options in commands)


def test_the_one_host_default_gives_delivery_a_worker_of_its_own_and_consumes_every_queue():
    """Wherever the one-host default is written (the units, `make run`, the README's production section, the
    production drill of CI): one worker for `delivery` alone, so that no flood of other work takes the slots that
    send mail, and one for every other queue, Celery's default among them."""
    units = "\n".join(path.read_text() for path in sorted((DEPLOY / "systemd").glob("*.service")))
    expected = sorted([[DELIVERY], sorted(set(QUEUES) - {DELIVERY})])
    for name, text in {
        "deploy/systemd": units,
        "make run": "\n".join(" ".join(command) for command in dev_processes(port=8000).values()),
        "README.md": (ROOT / "README.md").read_text(),
        ".ci/production.sh": (ROOT / ".ci" / "production.sh").read_text(),
    }.items():
        assert _workers(text) == expected, name
