"""`manage.py smtp_server --processes N` as production runs it: a real parent and its server processes on one
address, driven with smtplib, stopped with SIGTERM."""

import os
import signal
import smtplib
import socket
import subprocess
import uuid
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path

import pytest

from config.tests.processes import BIN, ROOT, free_port, process_env, wait_until
from messaging.models import Email

pytestmark = pytest.mark.django_db(transaction=True)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return sorted(found)


def _answers(port: int) -> bool:
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=2) as client:
            return client.ehlo()[0] == 250
    except OSError:
        return False


@contextmanager
def smtp_server(processes: int, port: int):
    process = subprocess.Popen(
        [str(BIN / "python"), "manage.py", "smtp_server", "--processes", str(processes)],
        cwd=ROOT,
        env=process_env(SMTP_SUBMISSION_LISTEN=f"127.0.0.1:{port}", SMTP_ALLOW_PLAINTEXT_AUTH="true"),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(_children(process.pid)) == processes and _answers(port), timeout=60, what="listeners")
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _message(n: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "Shop <hello@alice.test>", f"r{n}@example.test", f"Order {n}"
    msg["Message-ID"] = f"<{uuid.uuid4()}@app.example>"
    msg.set_content(f"Hello {n}")
    return msg.as_bytes()


def _send(port: int, key: str, first: int, count: int) -> list[int]:
    """`count` messages over one connection, as an app reuses it; the DATA reply codes."""
    codes = []
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
        client.login("herald", key)
        for n in range(first, first + count):
            client.mail("app@example.test")
            client.rcpt(f"r{n}@example.test")
            codes.append(client.data(_message(n))[0])
    return codes


def test_processes_share_the_address_take_messages_and_stop_on_sigterm(project):
    port = free_port()
    with smtp_server(2, port) as parent:
        children = _children(parent.pid)
        assert len(children) == 2
        # Each process listens on the same address, with a socket of its own.
        listening = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True).stdout
        assert all(f"pid={child}," in listening for child in children), listening

        codes = [code for connection in range(6) for code in _send(port, project.keys.secret_key, connection * 3, 3)]
        assert codes == [250] * 18
        assert Email.objects.filter(project=project.project).count() == 18

        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=45) == 0
        assert "SMTP server stopped" in parent.stdout.read()
    for child in children:
        assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    with socket.socket() as sock:  # nobody listens there any more
        assert sock.connect_ex(("127.0.0.1", port)) != 0


def test_a_process_that_dies_is_replaced_and_the_others_keep_serving(project):
    port = free_port()
    with smtp_server(2, port) as parent:
        first, second = _children(parent.pid)
        os.kill(first, signal.SIGKILL)
        wait_until(
            lambda: len(_children(parent.pid)) == 2 and first not in _children(parent.pid),
            timeout=30,
            what="a new process",
        )
        assert second in _children(parent.pid)
        assert _send(port, project.keys.secret_key, 0, 4) == [250] * 4
        parent.send_signal(signal.SIGINT)
        assert parent.wait(timeout=45) == 0


def test_a_taken_address_fails_at_once():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [str(BIN / "python"), "manage.py", "smtp_server", "--processes", "2"],
            cwd=ROOT,
            env=process_env(SMTP_SUBMISSION_LISTEN=f"127.0.0.1:{port}"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert "Address already in use" in result.stderr
