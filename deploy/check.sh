#!/usr/bin/env bash
# Check the deployment examples (CI's "deploy examples" step): the systemd units with `systemd-analyze verify`, the
# nginx site with `nginx -t` inside a throw-away main configuration and a self-signed certificate made here. Nothing
# is started or installed. Needs systemd-analyze (apt systemd), nginx and openssl; run from the repository, after
# `make install` (the units' ExecStart must find gunicorn and celery in .venv, or in $VENV).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv=$(cd "${VENV:-.venv}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The units name /opt/herald; verify them as if the repository were installed there. verify exits 0 on warnings
# (an unknown key, a misspelled section), so any output at all fails the check.
mkdir "$work/units"
for unit in deploy/systemd/*.service; do
  sed -e "s#/opt/herald/.venv#$venv#g" -e "s#/opt/herald#$repo#g" "$unit" > "$work/units/$(basename "$unit")"
done
if ! out=$(systemd-analyze verify "$work"/units/*.service 2>&1) || [ -n "$out" ]; then
  printf 'systemd-analyze verify:\n%s\n' "$out" >&2
  exit 1
fi
echo "systemd units: $(ls deploy/systemd | tr '\n' ' ')ok"

# The site as an operator installs it, with its certificate paths pointed at a certificate made for the check.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=mail.example.com" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
sed -e "s#/etc/letsencrypt/live/mail.example.com/fullchain.pem#$work/cert.pem#" \
    -e "s#/etc/letsencrypt/live/mail.example.com/privkey.pem#$work/key.pem#" \
    deploy/nginx/herald.conf > "$work/herald.conf"
cat > "$work/nginx.conf" <<CONF
pid $work/nginx.pid;
error_log stderr;
events {}
http {
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    include $work/herald.conf;
}
CONF
nginx -t -q -p "$work" -c "$work/nginx.conf"
echo "nginx site: ok"
