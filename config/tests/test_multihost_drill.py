"""The multi-host drill (`bench/multihost.py`) at a small size: two web and two worker hosts in network namespaces,
a beat on each, sends, tracks and a scheduled campaign, then a worker host lost and the leading beat killed; every
check of its books must hold. It runs as its own process, on a database of its own beside the test database (whose
migrated schema it copies), and needs root (network namespaces), `ip` and `redis-server`."""

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest
from django.conf import settings

from config.tests.processes import ROOT, database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db]  # the test database, migrated: its schema is copied


def test_the_books_hold_when_a_worker_host_is_lost_and_the_leading_beat_killed():
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the drill's hosts share a PostgreSQL: run with DATABASE_URL=postgres://...")
    if os.geteuid() != 0:
        pytest.skip("the drill creates network namespaces: run as root")
    if shutil.which("ip") is None or shutil.which("redis-server") is None:
        pytest.skip("the drill needs `ip` (iproute2) and `redis-server`")
    test_database = database_url()
    server, name = test_database.rsplit("/", 1)
    env = {**os.environ, "BENCH_PG": server, "BENCH_DATABASE": f"{name}_multihost"}
    sizes = shlex.split("--sends 80 --tracks 80 --contacts 200 --seconds 12 --settle 60 --web-workers 1")
    drill = subprocess.Popen(
        [sys.executable, "bench/multihost.py", *sizes, "--schema-from", test_database],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = drill.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        drill.terminate()  # SIGTERM: the drill removes its namespaces and processes on the way out
        out, err = drill.communicate()
    finally:
        drop = f"DROP DATABASE IF EXISTS {name}_multihost WITH (FORCE)"
        subprocess.run(["psql", f"{server}/postgres", "-qc", drop], check=True, capture_output=True)
    assert out, err[-3000:]
    report = json.loads(out)
    print(
        json.dumps(
            {
                key: report[key]
                for key in ("lost", "database ready in", "set up in", "settled after the load", "whole run")
            }
        )
    )
    assert [check for check, ok in report["checks"].items() if not ok] == [], report
    assert drill.returncode == 0
    # Every call was accepted, the campaign went to every contact, and the host was lost while it was delivered.
    assert report["sends accepted"] == 80 and report["tracks accepted"] == 80
    assert report["campaign emails"] == 200 and report["campaign delivering at the loss"]
    assert report["lost"]["delivery pool processes"] == 2
