"""deploy/ agrees with the service: the nginx site's body limit is the service's own and it forwards the headers
TRUSTED_PROXY_COUNT=1 reads; the units start the processes the way the README does. (CI also runs
`deploy/check.sh`: systemd-analyze verify and nginx -t.)"""

import re
from pathlib import Path

from django.conf import settings

DEPLOY = Path(settings.BASE_DIR) / "deploy"


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
    assert set(units) == {"herald-web", "herald-worker", "herald-beat", "herald-smtp"}
    assert "gunicorn -c config/gunicorn.py config.wsgi" in units["herald-web"]
    assert "celery -A config worker" in units["herald-worker"]
    assert "celery -A config beat" in units["herald-beat"]
    assert "manage.py smtp_server" in units["herald-smtp"]
    assert all("Restart=always" in unit and "EnvironmentFile=" in unit for unit in units.values())
