#!/usr/bin/env bash
# The README's production path with the runtime requirements alone (CI's "production install" step): a fresh
# virtualenv from requirements.txt, PostgreSQL and Redis as cache and broker, the README's preparation, then gunicorn,
# the two Celery workers (delivery, and the other queues) and celery-beat started as deploy/systemd starts them. One
# email sent through /v1/send must reach a loopback SMTP sink DKIM-signed, `doctor` must find the database,
# migrations, Redis, broker and SMTP server fine, and the processes must stop cleanly. Run from the repository after `make install-dev` (the sink is aiosmtpd, a
# test requirement, run from .venv; nothing of .venv is used by the service).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

work=$PWD/var/ci-production
database=herald_ci_production
broker_db=12 cache_db=13
web_port=${CI_PRODUCTION_WEB_PORT:-8097} smtp_port=${CI_PRODUCTION_SMTP_PORT:-2597}
pids=()

stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
on_exit() {
  status=$?
  stop
  if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log; do [ -f "$log" ] && printf '\n--- %s (last 40 lines)\n' "$log" && tail -n 40 "$log"; done
  fi
  psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null || true
  redis-cli -h 127.0.0.1 -n "$broker_db" flushdb >/dev/null || true
  redis-cli -h 127.0.0.1 -n "$cache_db" flushdb >/dev/null || true
}
trap on_exit EXIT

rm -rf "$work"
mkdir -p "$work/metrics"  # and the sink makes its Maildir, mail/
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip
"$work/venv/bin/pip" install --quiet -r requirements.txt
bin=$work/venv/bin
echo "[${SECONDS} s] requirements.txt installed in a fresh virtualenv"

psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" \
  -c "CREATE DATABASE $database"
redis-cli -h 127.0.0.1 -n "$broker_db" flushdb >/dev/null
redis-cli -h 127.0.0.1 -n "$cache_db" flushdb >/dev/null

# The README's step 1, with everything on loopback; PROMETHEUS_MULTIPROC_DIR as the units set it.
export DEBUG=false SECRET_KEY="$("$bin/python" -c 'import secrets; print(secrets.token_urlsafe(50))')"
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$database
export CELERY_BROKER_URL=redis://127.0.0.1:6379/$broker_db CACHE_URL=redis://127.0.0.1:6379/$cache_db
export EMAIL_URL=smtp://127.0.0.1:$smtp_port
export PUBLIC_URL=https://mail.example.com ALLOWED_HOSTS=mail.example.com TRUSTED_PROXY_COUNT=1
export PROMETHEUS_MULTIPROC_DIR=$work/metrics

DJANGO_SETTINGS_MODULE=config.settings.base "$bin/python" .ci/runtime_imports.py

# Steps 2 and 3.
echo "[${SECONDS} s] runtime imports checked"
"$bin/python" manage.py migrate --no-input -v 0
"$bin/python" manage.py collectstatic --no-input -v 0
"$bin/python" manage.py check --deploy --fail-level WARNING
secret=$("$bin/python" manage.py create_project --name "Acme" --owner-email ops@acme.test \
  --verified-domain acme.test --json | "$bin/python" -c 'import json, sys; print(json.load(sys.stdin)["secretKey"])')

echo "[${SECONDS} s] migrated, static files collected, deployment checks passed, project created"

# Step 4, as deploy/systemd/herald-*.service start them, and the sink that stands for the SMTP relay.
.venv/bin/python -m aiosmtpd -n -l "127.0.0.1:$smtp_port" -c aiosmtpd.handlers.Mailbox "$work/mail" \
  >"$work/sink.log" 2>&1 &
pids+=($!)
"$bin/gunicorn" -c config/gunicorn.py config.wsgi --bind "127.0.0.1:$web_port" >"$work/web.log" 2>&1 &
pids+=($!)
"$bin/celery" -A config worker --loglevel INFO -n delivery@%h -Q delivery --concurrency 2 \
  >"$work/delivery.log" 2>&1 &
pids+=($!)
"$bin/celery" -A config worker --loglevel INFO -n work@%h -Q workflows,bulk,periodic,celery --concurrency 2 \
  >"$work/worker.log" 2>&1 &
pids+=($!)
"$bin/celery" -A config beat --loglevel INFO --schedule "$work/celerybeat-schedule" >"$work/beat.log" 2>&1 &
pids+=($!)

# As the TLS-terminating proxy forwards a request (deploy/nginx): its host and scheme.
request() {
  curl -sS -H "Host: mail.example.com" -H "X-Forwarded-Proto: https" -H "X-Forwarded-For: 192.0.2.10" "$@"
}

# Step 5: /health is 200 once the web answers and reaches the database, the cache and the broker.
for _ in $(seq 60); do
  [ "$(request -o /dev/null -w '%{http_code}' "http://127.0.0.1:$web_port/health" 2>/dev/null)" = 200 ] && break
  sleep 0.5
done
echo "[${SECONDS} s] $(request --fail-with-body "http://127.0.0.1:$web_port/health")"

request --fail-with-body -X POST "http://127.0.0.1:$web_port/v1/send" -H "Authorization: Bearer $secret" \
  -H "Content-Type: application/json" \
  -d '{"to": "ann@example.com", "from": "hello@acme.test", "subject": "Production path", "body": "<p>Hello</p>"}'
echo

arrived=""
for _ in $(seq 120); do
  arrived=$(grep -l "^Subject: Production path" "$work/mail/new/"* 2>/dev/null | head -n 1 || true)
  [ -n "$arrived" ] && break
  sleep 0.5
done
if [ -z "$arrived" ]; then
  echo "the email sent through /v1/send did not reach the sink in 60 s" >&2
  exit 1
fi
grep -q "^DKIM-Signature:" "$arrived" && grep -q " d=acme.test;" "$arrived" ||
  { echo "the email arrived without its DKIM signature" >&2; exit 1; }
grep -q "^To: ann@example.com" "$arrived"
echo "delivered: $(grep -m1 '^Message-ID:' "$arrived")"

# Step 6: the checks that do not depend on time (beat's first runs) or on this host's resolver must be fine.
"$bin/python" manage.py doctor --json >"$work/doctor.json" || true
"$bin/python" - "$work/doctor.json" <<'PY'
import json, sys

checks = {check["name"]: check for check in json.load(open(sys.argv[1]))["checks"]}
wrong = {name: checks[name] for name in ("database", "migrations", "redis", "broker", "smtp") if checks[name]["state"] != "ok"}
if wrong:
    sys.exit(f"doctor: {wrong}")
print("doctor: database, migrations, redis, broker and smtp ok")
PY

for pid in "${pids[@]}"; do kill -0 "$pid" || { echo "a process stopped on its own (pid $pid)" >&2; exit 1; }; done
stop
echo "production path: ok in ${SECONDS} s"
