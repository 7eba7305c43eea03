"""The slow-receivers phase of the chaos run (`bench/chaos.py`): transactional mail while workflows call webhook
receivers that trickle, hang and redirect elsewhere.

Transactional `/v1/send` calls go out at a steady rate (`--send-rate`) for the whole phase, each to an address of
its own. For the first half (`--slow-seconds`) nothing else happens; then three workflows are enabled, each
TRIGGER -> WEBHOOK to a receiver on loopback (raw sockets, `workflows.tests.receivers.RawReceiver`):

- trickle: reads the request and answers a header byte every half second, for ever;
- hang: reads the request and never answers;
- redirect: answers 307 to another origin (a listener of its own, which must never be called),

and events trigger them in turn at a steady rate (`--webhook-rate`) for the second half. The worker's engine
retries the timed-out calls (after about 1, 5 and 25 s) while the sweep runs every 5 s with a step lease set
shorter than a call (`WORKFLOW_STEP_LEASE_SECONDS=5`, which the engine raises to three calls' bound).

The figures: the delivery latency of the transactional emails (the email's `sent_at` less its `created_at`, as the
database records them), p50 and p99, of the sends before the webhooks and of those during them; and every webhook
call as its receiver saw it, from accepting the connection to the worker hanging up. The checks: the p99 during is
at most 1.5 times the p99 before; no call lasted longer than its bound (`WEBHOOK_TIMEOUT_SECONDS` + 0.5 s); no step
was called twice at once (the sweep never took a step whose call was still within its deadline); the redirect's
target was never called.
"""

import itertools
import statistics
import threading
import time
from collections import Counter, defaultdict

import httpx

from workflows.tests.receivers import RawReceiver

KINDS = ("trickle", "hang", "redirect")
DOMAIN = "slow.chaos.test"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: " + b"a" * 100_000
# Sends still undelivered this long after the phase count as never delivered.
DELIVERY_WAIT_SECONDS = 300


def _trickle(conversation) -> None:
    conversation.read_request()
    conversation.trickle(HEAD, 0.5)


def _hang(conversation) -> None:
    conversation.read_request()
    conversation.hang()


class Receivers:
    """The three receivers and the redirect's target, each conversation kept until the `with` block ends."""

    def __enter__(self):
        self.target = RawReceiver(_hang, limit=600)
        location = self.target.url("/elsewhere").encode()

        def redirect(conversation) -> None:
            conversation.read_request()
            conversation.sock.sendall(
                b"HTTP/1.1 307 Temporary Redirect\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"
            )
            conversation.hang()

        self.by_kind = {
            "trickle": RawReceiver(_trickle, limit=600),
            "hang": RawReceiver(_hang, limit=600),
            "redirect": RawReceiver(redirect, limit=600),
        }
        return self

    def __exit__(self, *exc) -> None:
        for receiver in [*self.by_kind.values(), self.target]:
            receiver.stop()

    def calls(self) -> list[dict]:
        """Every call so far: its kind, webhook-id, start, end and duration (the age so far of one still open)."""
        now = time.monotonic()
        return [
            {
                "kind": kind,
                "id": _header(conversation.head, b"webhook-id"),
                "start": conversation.accepted,
                "end": conversation.ended,
                "seconds": (conversation.ended or now) - conversation.accepted,
            }
            for kind, receiver in self.by_kind.items()
            for conversation in list(receiver.conversations)
        ]


def _header(head: bytes, name: bytes) -> str:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode("ascii", "replace")
    return ""


class Paced:
    """Calls `call(n)` at `rate` per second from one thread until stopped (late calls go at once, none is skipped),
    recording when each began."""

    def __init__(self, rate: float, call):
        self.rate, self.call = rate, call
        self.started: dict[int, float] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Paced":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()

    def _run(self) -> None:
        began, n = time.monotonic(), 0
        while not self.stopping.is_set():
            self.stopping.wait(max(0.0, began + n / self.rate - time.monotonic()))
            if self.stopping.is_set():
                return
            self.started[n] = time.monotonic()
            self.call(n)
            n += 1


def _workflows(client: httpx.Client, receivers: Receivers) -> list[str]:
    ids = []
    for kind, receiver in receivers.by_kind.items():
        workflow = client.post("/workflows", json={"name": f"Slow {kind}", "triggerConfig": {"eventName": kind}})
        workflow.raise_for_status()
        workflow_id = workflow.json()["id"]
        step = {"type": "WEBHOOK", "config": {"url": receiver.url(f"/{kind}")}}
        client.post(f"/workflows/{workflow_id}/steps", json=step).raise_for_status()
        ids.append(workflow_id)
    return ids


def _enable(client: httpx.Client, ids: list[str], enabled: bool) -> None:
    for workflow_id in ids:
        client.patch(f"/workflows/{workflow_id}", json={"enabled": enabled}).raise_for_status()


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _warm_up(sender: httpx.Client, wait) -> None:
    """One email sent and delivered before anything is measured: the worker has started and connected."""
    from messaging.models import Email

    to = f"warm-up@{DOMAIN}"
    body = {"to": to, "from": "hi@bench.test", "subject": "Warm-up", "body": "<p>Hi</p>"}
    sender.post("/v1/send", json=body).raise_for_status()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not Email.objects.filter(to_email=to).exclude(sent_at=None).exists():
        wait(1)


def _latencies(addresses: list[str]) -> tuple[list[float], int]:
    """The delivery latency (s) of each address's email that was sent, and how many were not."""
    from messaging.models import Email

    rows = Email.objects.filter(to_email__in=addresses).values_list("created_at", "sent_at")
    sent = [(sent_at - created_at).total_seconds() for created_at, sent_at in rows if sent_at is not None]
    return sent, len(addresses) - len(sent)


def _figures(latencies: list[float], unsent: int) -> dict:
    # An email never delivered is slower than any delivered one: it counts in the percentiles as infinite.
    values = latencies + [float("inf")] * unsent
    return {
        "emails": len(values),
        "not delivered": unsent,
        "p50 ms": round(_percentile(values, 0.50) * 1000, 1),
        "p99 ms": round(_percentile(values, 0.99) * 1000, 1),
    }


def _overlapping(calls: list[dict]) -> int:
    """Calls of one step (one webhook-id) that were open at the same time: a step run twice at once."""
    by_id = defaultdict(list)
    for call in calls:
        by_id[call["id"]].append(call)
    overlaps = 0
    for same in by_id.values():
        same.sort(key=lambda call: call["start"])
        for earlier, later in itertools.pairwise(same):
            if earlier["end"] is None or later["start"] < earlier["end"]:
                overlaps += 1
    return overlaps


def slow_receivers_phase(base: str, project: dict, wait, *, seconds: float, send_rate: float, webhook_rate: float):
    """Run the phase (`wait(seconds)` keeps the rest of the service going meanwhile); returns its report and
    checks."""
    from django.conf import settings

    from messaging.models import Email
    from workflows.webhooks import webhook_call_limit

    bound = webhook_call_limit()
    secret = {"Authorization": f"Bearer {project['secretKey']}"}
    sends: dict[str, list[str]] = {"before": [], "during": []}
    window = ["before"]
    refused = Counter()
    events = Counter()
    with Receivers() as receivers, httpx.Client(base_url=base, headers=secret, timeout=30) as api:
        ids = _workflows(api, receivers)
        sender = httpx.Client(base_url=base, headers=secret, timeout=30)
        tracker = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {project['publicKey']}"}, timeout=30)

        def send(n: int) -> None:
            to = f"tx-{n}@{DOMAIN}"
            body = {"to": to, "from": "hi@bench.test", "subject": f"Receipt {n}", "body": "<p>Thanks</p>"}
            try:
                accepted = sender.post("/v1/send", json=body).status_code == 200
            except httpx.HTTPError:
                accepted = False
            if accepted:
                sends[window[0]].append(to)
            else:
                refused["send"] += 1

        def track(n: int) -> None:
            kind = KINDS[n % len(KINDS)]
            try:
                answer = tracker.post("/v1/track", json={"email": f"hook-{n}@{DOMAIN}", "event": kind})
                events[kind if answer.status_code == 200 else "refused"] += 1
            except httpx.HTTPError:
                events["refused"] += 1

        _warm_up(sender, wait)
        sending = Paced(send_rate, send).start()
        print(f"slow receivers: {send_rate:g} sends/s for {seconds:g} s before the webhooks", flush=True)
        wait(seconds)
        window[0] = "during"
        _enable(api, ids, True)
        tracking = Paced(webhook_rate, track).start()
        print(
            f"slow receivers: and {webhook_rate:g} events/s to trickling, hanging and redirecting receivers", flush=True
        )
        wait(seconds)
        tracking.stop()
        sending.stop()
        _enable(api, ids, False)
        sender.close()
        tracker.close()
        print("slow receivers: waiting for the transactional emails to be delivered", flush=True)
        deadline = time.monotonic() + DELIVERY_WAIT_SECONDS
        everything = sends["before"] + sends["during"]
        while time.monotonic() < deadline and Email.objects.filter(to_email__in=everything, sent_at=None).exists():
            wait(2)
        wait(bound + 1)  # the calls open when the events stopped end within their bound
        calls = receivers.calls()
        target_calls = len(receivers.target.conversations)
    before, during = _figures(*_latencies(sends["before"])), _figures(*_latencies(sends["during"]))
    # A call still open counts with its age so far: it must not be past the bound either.
    longest = {
        kind: round(max((call["seconds"] for call in calls if call["kind"] == kind), default=0.0), 2) for kind in KINDS
    }
    ended = [call for call in calls if call["end"] is not None]
    ratio = during["p99 ms"] / before["p99 ms"] if before["p99 ms"] else float("inf")
    checks = {
        "transactional delivery p99 during the webhooks at most 1.5 x before": ratio <= 1.5,
        "no webhook call longer than its bound": max(longest.values()) <= bound,
        "no step called twice at once": _overlapping(calls) == 0,
        "no cross-origin redirect followed": target_calls == 0,
    }
    report = {
        "seconds per window": seconds,
        "sends per second": send_rate,
        "events per second": webhook_rate,
        "transactional delivery before": before,
        "transactional delivery during": during,
        "p99 during / before": round(ratio, 2),
        "sends refused": refused["send"],
        "events": dict(events),
        "webhook calls": dict(Counter(call["kind"] for call in calls)),
        "webhook calls still open at the end": len(calls) - len(ended),
        "webhook calls per step, most": max(Counter(call["id"] for call in calls).values(), default=0),
        "longest webhook call, seconds": longest,
        "webhook call bound, seconds": bound,
        "median webhook call (ended), seconds": {
            kind: round(statistics.median([c["seconds"] for c in ended if c["kind"] == kind] or [0.0]), 2)
            for kind in KINDS
        },
        "WEBHOOK_TIMEOUT_SECONDS": settings.WEBHOOK_TIMEOUT_SECONDS,
        "checks": checks,
    }
    return report, checks
