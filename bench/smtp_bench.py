"""SMTP submission acceptance beside POST /v1/send's, in the same run and on the same database.

`manage.py smtp_server --processes P` (STARTTLS with a certificate made here; P is gunicorn's worker count, so that
both sides use the same number of processes) takes messages from N concurrent smtplib clients, each on one
connection over STARTTLS and AUTH for `--per-connection` messages (apps reuse a connection: the TLS handshake and
AUTH are paid once per connection), then a new connection, each message to a new recipient with a rendered subject
and body; then gunicorn takes `/v1/send` requests of the same shape from wrk (`bench/send_accept.py`'s
requests). No worker runs: what is measured is acceptance (parse, checks, contact upsert, rendering, the email row,
the hand-over), as `/v1/send`'s figure is. The phases alternate, `--runs` times each.

    python bench/smtp_bench.py [--database sqlite|postgres] [--clients 8] [--per-connection 100] [--seconds 15]
                               [--runs 2] [--workers 2]
"""

import argparse
import json
import multiprocessing
import os
import smtplib
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.send_accept import send_options
from bench.serve import (
    PYTHON,
    ROOT,
    bench_env,
    database_name,
    fresh_database,
    gunicorn,
    machine,
    setup_project,
    wrk,
    wrk_medians,
)


def certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *subject, *files],
        check=True,
        capture_output=True,
    )
    return cert, key


def _cpu_seconds(marker: str) -> float:
    """The CPU time (user and system) of every process whose command line holds `marker`, and of their children:
    the server under test alone, not the clients that load it."""
    tick = os.sysconf("SC_CLK_TCK")
    stats, roots = {}, set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
        if marker in cmdline:
            roots.add(int(entry.name))
    return sum(cpu for pid, (ppid, cpu) in stats.items() if pid in roots or ppid in roots)


@contextmanager
def smtp_server(env: dict, port: int, processes: int):
    process = subprocess.Popen(
        [PYTHON, "manage.py", "smtp_server", "--processes", str(processes)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield
    finally:
        process.terminate()
        process.wait(timeout=60)


# A multipart message as a mail library writes it, filled in by string formatting: the clients' CPU is the
# machine's too, and building each with the email package would cost more than the server spends on it.
MESSAGE = (
    "From: Bench <news@bench.test>\r\nTo: Reader {n} <{to}>\r\nSubject: Hello {{{{ name }}}}\r\n"
    "Message-ID: <{id}@bench.test>\r\nMIME-Version: 1.0\r\n"
    'Content-Type: multipart/alternative; boundary="b"\r\n\r\n'
    '--b\r\nContent-Type: text/plain; charset="utf-8"\r\n\r\nHi {{{{ name }}}}, your plan is pro.\r\n'
    '--b\r\nContent-Type: text/html; charset="utf-8"\r\n\r\n<p>Hi {{{{ name }}}}, your plan is pro.</p>\r\n--b--\r\n'
)


def _message(n: int) -> tuple[bytes, str]:
    to = f"r{n}-{uuid.uuid4().hex[:12]}@example.test"
    return MESSAGE.format(n=n, to=to, id=uuid.uuid4()).encode(), to


def _client(port: int, key: str, ca: str, until: float, per_connection: int, latencies: list, refused: list) -> None:
    context = ssl.create_default_context(cafile=ca)
    n = 0
    while time.monotonic() < until:
        with smtplib.SMTP("localhost", port, timeout=60) as client:
            client.starttls(context=context)
            client.login("herald", key)
            for _ in range(per_connection):
                if time.monotonic() >= until:
                    break
                n += 1
                raw, recipient = _message(n)
                started = time.perf_counter()
                client.mail("bench@bench.test")
                client.rcpt(recipient)
                code, _ = client.data(raw)
                latencies.append(time.perf_counter() - started)
                if code != 250:
                    refused.append(code)


def _process(port: int, key: str, ca: str, seconds: float, threads: int, per_connection: int, results) -> None:
    latencies, refused = [], []
    until = time.monotonic() + seconds
    workers = [
        threading.Thread(target=_client, args=(port, key, ca, until, per_connection, latencies, refused))
        for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put((latencies, refused))


def smtp_run(
    port: int, key: str, ca: str, *, clients: int, processes: int, seconds: float, per_connection: int = 100
) -> dict:
    """`clients` connections at a time (threads spread over `processes` processes, so the clients' own CPU is not
    one GIL), each for `per_connection` messages."""
    results = multiprocessing.Queue()
    per_process = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    started = time.monotonic()
    children = [
        multiprocessing.Process(target=_process, args=(port, key, ca, seconds, threads, per_connection, results))
        for threads in per_process
        if threads
    ]
    for child in children:
        child.start()
    gathered = [results.get() for _ in children]
    for child in children:
        child.join()
    elapsed = time.monotonic() - started
    latencies = sorted(latency for found, _ in gathered for latency in found)
    refused = [code for _, codes in gathered for code in codes]
    return {
        "messages_per_second": round((len(latencies) - len(refused)) / elapsed, 1),
        "messages": len(latencies),
        "refused": len(refused),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--clients", type=int, default=8, help="concurrent SMTP connections")
    parser.add_argument("--processes", type=int, default=2, help="client processes the connections are spread over")
    parser.add_argument("--per-connection", type=int, default=100, help="messages per SMTP connection")
    parser.add_argument("--connections", type=int, default=8, help="concurrent /v1/send connections (wrk)")
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers, and SMTP server processes")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=18012)
    parser.add_argument("--smtp-port", type=int, default=18025)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="herald-smtp-bench-"))
    cert, key = certificate(folder)
    extra = {
        "API_RATE_LIMIT_PER_MINUTE": "100000000",
        "SMTP_SUBMISSION_LISTEN": f"127.0.0.1:{args.smtp_port}",
        "SMTP_HOSTNAME": "localhost",
        "SMTP_TLS_CERT_FILE": str(cert),
        "SMTP_TLS_KEY_FILE": str(key),
    }
    if args.database == "sqlite":
        extra["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    else:
        fresh_database(database_name("herald_bench_smtp"))
    env = bench_env(database_name("herald_bench_smtp"), **extra)
    redis.Redis.from_url(env["CACHE_URL"]).flushdb()
    project = setup_project(env)
    smtp_runs, send_runs = [], []
    with (
        smtp_server(env, args.smtp_port, args.workers),
        gunicorn(env, port=args.port, workers=args.workers, threads=args.threads) as base,
    ):
        options = send_options(project["secretKey"], args.connections)
        wrk(f"{base}/v1/send", seconds=3, **options)  # warm-up
        smtp_run(
            args.smtp_port,
            project["secretKey"],
            str(cert),
            clients=args.clients,
            processes=args.processes,
            seconds=3,
            per_connection=args.per_connection,
        )
        for _ in range(args.runs):
            cpu = _cpu_seconds(f"127.0.0.1:{args.port}")
            send_runs.append(wrk(f"{base}/v1/send", seconds=args.seconds, **options))
            used = _cpu_seconds(f"127.0.0.1:{args.port}") - cpu
            send_runs[-1]["server_cpu_ms_per_request"] = round(used * 1000 / send_runs[-1]["requests"], 2)
            cpu = _cpu_seconds("smtp_server")
            smtp_runs.append(
                smtp_run(
                    args.smtp_port,
                    project["secretKey"],
                    str(cert),
                    clients=args.clients,
                    processes=args.processes,
                    seconds=args.seconds,
                    per_connection=args.per_connection,
                )
            )
            used = _cpu_seconds("smtp_server") - cpu
            smtp_runs[-1]["server_cpu_ms_per_message"] = round(used * 1000 / smtp_runs[-1]["messages"], 2)
    smtp_rate = statistics.median(run["messages_per_second"] for run in smtp_runs)
    send = wrk_medians(send_runs)
    print(
        json.dumps(
            {
                "benchmark": "smtp_bench",
                "database": args.database,
                "machine": machine(),
                "smtp": {
                    "clients": args.clients,
                    "messages_per_connection": args.per_connection,
                    "server_processes": args.workers,
                    "median_messages_per_second": smtp_rate,
                    "median_p99_ms": statistics.median(run["p99_ms"] for run in smtp_runs),
                    "median_server_cpu_ms_per_message": statistics.median(
                        run["server_cpu_ms_per_message"] for run in smtp_runs
                    ),
                    "runs": smtp_runs,
                },
                "send": {
                    "connections": args.connections,
                    "gunicorn": f"{args.workers} workers x {args.threads} threads",
                    **send,
                    "median_server_cpu_ms_per_request": statistics.median(
                        run["server_cpu_ms_per_request"] for run in send_runs
                    ),
                    "runs": send_runs,
                },
                "smtp_to_send_ratio": round(smtp_rate / send["median_requests_per_second"], 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
