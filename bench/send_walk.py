"""The walk of one accepted `POST /v1/send` through the service's own modules, from the WSGI application gunicorn
serves to the QUEUED row and the answer, in this process (PostgreSQL and Redis as in the other benchmarks): every
module of the project whose code runs, in the order it is first entered, and every return to a room (an app, or a
room of messaging or accounts, or the HTTP base) that the call stack had left, which the layering forbids.

    python bench/send_walk.py [--database herald_bench_walk] [--redis-db 4]

docs/architecture.md ("The modules a send crosses") lists what it prints.
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import bench_env, fresh_database, setup_project, wsgi_environ

ROOT = Path(__file__).resolve().parents[1]
APPS = ("config", "core", "accounts", "contacts", "messaging", "campaigns", "segments", "workflows", "domains")


def module_of(filename: str) -> str | None:
    path = Path(filename)
    if ".venv" in path.parts or not path.is_relative_to(ROOT):
        return None
    relative = path.relative_to(ROOT)
    return str(relative) if relative.parts[0] in APPS else None


def room_of(module: str) -> str:
    """Rooms: messaging's and accounts' subpackages, the HTTP base (core/http) and every other app or core."""
    parts = Path(module).with_suffix("").parts
    if parts[0] in ("messaging", "accounts") and len(parts) > 2:
        return "/".join(parts[:2])
    if parts[0] == "core" and len(parts) > 2:
        return "core/http"
    return parts[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="herald_bench_walk")
    parser.add_argument("--redis-db", type=int, default=4)
    args = parser.parse_args()
    fresh_database(args.database)
    env = bench_env(args.database)
    redis = env["CACHE_URL"].rsplit("/", 1)[0]
    env.update(CACHE_URL=f"{redis}/{args.redis_db}", CELERY_BROKER_URL=f"{redis}/{args.redis_db + 1}")
    keys = setup_project(env)
    os.environ.update(env)
    from config.wsgi import application

    statuses = []

    def send(n: int) -> None:
        body = json.dumps({"to": f"w{n}@bench.test", "from": "hi@bench.test", "subject": "Hi", "body": "<p>Hi</p>"})
        environ = wsgi_environ("POST", "/v1/send", {"HTTP_AUTHORIZATION": f"Bearer {keys['secretKey']}"}, body.encode())
        b"".join(application(environ, lambda status, headers, exc_info=None: statuses.append(status)))

    for n in range(20):  # warm: imports, caches, prepared statements
        send(n)
    order, stack, returns = [], [], set()

    def profile(frame, event, arg) -> None:
        module = module_of(frame.f_code.co_filename)
        if event == "call":
            room = room_of(module) if module else None
            if module and module not in order:
                order.append(module)
            entered = [r for r in stack if r]
            # core is the library under every room, and a callback it runs for its caller (after the commit) is the
            # caller's own step: neither is a return.
            if room not in (None, "core") and entered and entered[-1] not in (room, "core") and room in entered:
                returns.add(f"{' -> '.join(dict.fromkeys(entered[entered.index(room) :]))} -> {room}")
            stack.append(room)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    send(99)
    sys.setprofile(None)
    assert statuses[-1] == "200 OK", statuses[-1]
    print(json.dumps({"modules": len(order), "order": order, "returns_to_a_room_left": sorted(returns)}, indent=2))


if __name__ == "__main__":
    main()
