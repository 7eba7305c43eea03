"""The SMTP phase of the chaos run (`bench/chaos.py`): `manage.py smtp_server` SIGKILLed in the middle of DATA while
apps submit over smtplib, then the books.

Clients (`--smtp-clients` threads) submit messages to the submission listener, each to an address of its own and with
a Message-ID of its own, as a mail library does; a message that gets a temporary failure (4xx) or whose connection
drops is sent again, with the same Message-ID, until it gets its 250, as a mail queue does. Before each kill a
client of its own sends MAIL, RCPT, DATA and half of a message and waits there: the server process (and its
children) is SIGKILLed with that session in the middle of DATA and the others wherever they are, some of them
committing a message whose 250 never leaves. It is started again 2 seconds later, as a supervisor would.

The books, at the sink: every message the clients were told 250 for is stored once and delivered exactly once;
nothing is stored or delivered that no client was told 250 for; the clients cut off in DATA were never told 250 by
the killed server; no email is left QUEUED or SENDING.
"""

import os
import signal
import smtplib
import subprocess
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from bench.serve import PYTHON, ROOT
from config.tests.processes import free_port, wait_until

DOMAIN = "smtp.chaos.test"
SENDER = "hi@bench.test"
MESSAGE = (
    "From: Chaos <{sender}>\r\nTo: <{to}>\r\nSubject: Chaos {n}\r\nMessage-ID: {message_id}\r\nMIME-Version: 1.0\r\n"
    'Content-Type: multipart/alternative; boundary="b"\r\n\r\n'
    '--b\r\nContent-Type: text/plain; charset="utf-8"\r\n\r\nMessage {n}, in text.\r\n{filler}\r\n'
    '--b\r\nContent-Type: text/html; charset="utf-8"\r\n\r\n<p>Message {n}, in HTML.</p>\r\n--b--\r\n'
)
# Some bulk, so that a message is still on its way in when the server is killed.
FILLER = "\r\n".join("x" * 76 for _ in range(200))
RESTART_AFTER_SECONDS = 2


class SmtpProcess:
    """`manage.py smtp_server` with the submission listener on a loopback port, in a process group of its own so
    that a kill takes every process it started."""

    def __init__(self, env: dict):
        self.port = free_port()
        self.env = {
            **env,
            "SMTP_SUBMISSION_LISTEN": f"127.0.0.1:{self.port}",
            "SMTP_INBOUND_LISTEN": "",
            "SMTP_ALLOW_PLAINTEXT_AUTH": "true",
        }
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "manage.py", "smtp_server"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.starts += 1
        wait_until(self._answers, timeout=60, what=f"smtp_server on port {self.port}", interval=0.2)

    def _answers(self) -> bool:
        try:
            with smtplib.SMTP("127.0.0.1", self.port, timeout=2) as client:
                return client.noop()[0] == 250
        except (OSError, smtplib.SMTPException):
            return False

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=60)


@dataclass
class Submission:
    """One message of one client and what became of its attempts."""

    n: int
    to: str
    message_id: str
    attempts: list[str] = field(default_factory=list)  # each attempt's outcome: `250`, `4xx`, `dropped in DATA`...
    reply: str = ""  # the 250's text
    accepted_attempt_at: float = 0.0  # when the attempt that got the 250 began (epoch seconds)

    @property
    def raw(self) -> bytes:
        return MESSAGE.format(sender=SENDER, to=self.to, n=self.n, message_id=self.message_id, filler=FILLER).encode()


def _submission(prefix: str, n: int) -> Submission:
    return Submission(n=n, to=f"{prefix}-{n}@{DOMAIN}", message_id=f"<{uuid.uuid4()}@bench.test>")


class Clients:
    """`count` threads submitting new messages until the `with` block ends, and then sending again those without
    their 250 until they have it (a refusal, 5xx, ends a message: no queue sends it again)."""

    def __init__(self, server: SmtpProcess, key: str, count: int):
        self.server, self.key = server, key
        self.submissions: list[Submission] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(f"c{i}",), daemon=True) for i in range(count)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def _connect(self) -> smtplib.SMTP | None:
        try:
            client = smtplib.SMTP("127.0.0.1", self.server.port, timeout=30)
            client.login("herald", self.key)
            return client
        except (OSError, smtplib.SMTPException):
            time.sleep(0.2)  # the server is down: a mail queue tries again later
            return None

    def _run(self, prefix: str) -> None:
        client, n, pending = None, 0, None
        while pending is not None or not self.stopping.is_set():
            if pending is None:
                n += 1
                pending = _submission(prefix, n)
                with self.lock:
                    self.submissions.append(pending)
            client = client or self._connect()
            if client is None:
                pending.attempts.append("connection refused")
                continue
            outcome = attempt(client, pending)
            pending.attempts.append(outcome)
            if outcome in ("250", "5xx"):
                pending = None
            elif outcome.startswith("dropped"):
                client = None
            elif outcome == "4xx":
                time.sleep(0.2)


def attempt(client: smtplib.SMTP, submission: Submission) -> str:
    """MAIL, RCPT, DATA of one message on a logged-in session: `250`, `4xx`, `5xx`, or `dropped ...` (the connection
    was lost, or the server closed it with a 421)."""
    step, began = "before DATA", time.time()
    try:
        code, reply = client.mail(SENDER)
        if code == 250:
            code, reply = client.rcpt(submission.to)
        if code == 250:
            step = "in DATA"
            code, reply = client.data(submission.raw)
    except (OSError, smtplib.SMTPServerDisconnected):
        return f"dropped {step}"
    except smtplib.SMTPResponseException as error:
        code, reply = error.smtp_code, error.smtp_error
    if code == 250:
        submission.reply, submission.accepted_attempt_at = reply.decode(), began
        return "250"
    if code == 421:
        return f"dropped {step}"
    try:
        client.rset()
    except (OSError, smtplib.SMTPServerDisconnected):
        return f"dropped {step}"
    return "4xx" if 400 <= code < 500 else "5xx"


class MidData:
    """A client that stops in the middle of a message's DATA (`start` returns once it is there), then finishes it
    after the kill: the killed server can have told it nothing but a dropped connection."""

    def __init__(self, server: SmtpProcess, key: str, n: int):
        self.submission = _submission("mid-data", n)
        self.client = smtplib.SMTP("127.0.0.1", server.port, timeout=30)
        self.client.login("herald", key)
        assert self.client.mail(SENDER)[0] == 250 and self.client.rcpt(self.submission.to)[0] == 250
        assert self.client.docmd("DATA")[0] == 354
        raw = self.submission.raw
        self.client.send(raw[: len(raw) // 2])
        self.rest = raw[len(raw) // 2 :] + b".\r\n"

    def finish(self) -> str:
        try:
            self.client.send(self.rest)
            code, _ = self.client.getreply()
        except (OSError, smtplib.SMTPServerDisconnected):
            return "dropped in DATA"
        return str(code)


def smtp_phase(env: dict, key: str, wait, *, seconds: float, clients: int, kills: int) -> tuple[dict, list]:
    """Run the phase (`wait(seconds)` keeps the rest of the service going meanwhile); returns its numbers and the
    submissions for `smtp_books`."""
    server = SmtpProcess(env)
    server.start()
    mid_data, downtime = [], []
    started = time.monotonic()
    try:
        with Clients(server, key, clients) as load:
            step = seconds / (kills + 1)
            for kill in range(kills):
                wait(step)
                cut = MidData(server, key, kill)
                print(f"SIGKILL smtp_server with a client in the middle of DATA ({len(load.submissions)} messages)")
                down = time.monotonic()
                server.kill()
                mid_data.append((cut.submission, cut.finish()))
                time.sleep(RESTART_AFTER_SECONDS)
                server.start()
                downtime.append(round(time.monotonic() - down, 1))
            wait(step)
            print("SMTP clients stop submitting new messages; resends go on until each has its 250", flush=True)
        # The messages cut off in DATA, sent again as their clients' queues would.
        for submission, outcome in mid_data:
            submission.attempts.append(outcome)
            while submission.attempts[-1] != "250":
                with smtplib.SMTP("127.0.0.1", server.port, timeout=30) as client:
                    client.login("herald", key)
                    submission.attempts.append(attempt(client, submission))
        submissions = [*load.submissions, *(submission for submission, _ in mid_data)]
    finally:
        server.stop()
    attempts = Counter(outcome for submission in submissions for outcome in submission.attempts)
    numbers = {
        "messages": len(submissions),
        "attempts": dict(attempts),
        "messages sent more than once": sum(len(s.attempts) > 1 for s in submissions),
        "server kills": kills,
        "seconds from kill to listening again": downtime,
        "submitting took": f"{time.monotonic() - started:.0f} s",
    }
    return numbers, [submissions, [outcome for _, outcome in mid_data]]


def smtp_books(submissions: list[Submission], mid_data_outcomes: list[str], sink) -> tuple[dict, dict]:
    """The phase's counts and checks, once delivery is done (see the module)."""
    from messaging.models import Email

    accepted = {s.to for s in submissions if s.attempts and s.attempts[-1] == "250"}
    rows = Email.objects.filter(to_email__endswith=f"@{DOMAIN}")
    stored = Counter(rows.values_list("to_email", flat=True))
    delivered = Counter(r.rcpt_tos[0] for r in sink.received if r.rcpt_tos[0].endswith(f"@{DOMAIN}"))
    created = {email_id: at.timestamp() for email_id, at in rows.values_list("id", "created_at")}
    # A message the killed server stored but whose 250 never left: its resend was answered with that email's id,
    # stored before the resend began.
    resent_after_commit = sum(
        1
        for s in submissions
        if s.reply and created.get(uuid.UUID(s.reply.rsplit(" ", 1)[-1]), float("inf")) < s.accepted_attempt_at
    )
    checks = {
        "every message got its 250 in the end": len(accepted) == len(submissions),
        "the clients cut off in DATA were told no 250": all(outcome != "250" for outcome in mid_data_outcomes),
        "every 250 stored once": all(stored[to] == 1 for to in accepted),
        "every 250 delivered exactly once": all(delivered[to] == 1 for to in accepted),
        "nothing stored or delivered without a 250": set(stored) <= accepted and set(delivered) <= accepted,
        "no SMTP email left QUEUED or SENDING": not rows.filter(
            status__in=[Email.Status.QUEUED, Email.Status.SENDING]
        ).exists(),
    }
    numbers = {
        "messages told 250": len(accepted),
        "emails stored": sum(stored.values()),
        "emails delivered": sum(delivered.values()),
        "stored by the killed server, 250 lost, resend recognised": resent_after_commit,
    }
    return numbers, checks
