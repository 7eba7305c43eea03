"""Clients that call `/v1/send` and `/v1/track` of a served instance until stopped, for tests and bench scripts
that break the service under load and then check what it accepted."""

import threading
import time

import httpx


class Load:
    """Threads that call /v1/send and /v1/track, each request with a recipient or contact of its own and every third
    with an Idempotency-Key (the view answers those), and remember each answer's status (0: no answer, the
    connection was cut) by kind and address.

    `base` is one served instance or several, called in turn. Without `sends`, each thread alternates sends and
    tracks as fast as they are answered until the load is stopped; with it, `sends` sends and `tracks` tracks,
    interleaved, are spread evenly over `seconds`, and the threads end when all were made (`finish`)."""

    def __init__(
        self,
        base: str | list[str],
        *,
        secret_key: str,
        public_key: str,
        sender: str,
        threads: int = 4,
        sends: int | None = None,
        tracks: int = 0,
        seconds: float = 0.0,
    ):
        self.bases, self.sender = [base] if isinstance(base, str) else list(base), sender
        self.keys = {"send": secret_key, "track": public_key}
        self.answers: dict[tuple[str, str], int] = {}
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]
        self.planned = None
        if sends is not None:
            total = sends + tracks
            # Request k is a send when it takes the count of sends so far past a whole number: evenly interleaved.
            kinds = ["send" if (k + 1) * sends // total > k * sends // total else "track" for k in range(total)]
            self.planned, self.interval, self.lock = iter(enumerate(kinds)), seconds / max(total, 1), threading.Lock()

    def __enter__(self):
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.finish()

    def finish(self) -> None:
        """Wait for the threads: the planned requests all made, or the load stopped."""
        for thread in self.threads:
            thread.join()

    def _next(self, n: int, i: int) -> tuple[int, str, str] | None:
        """The index, kind and address of a thread's next request, once its time came; None when there is none."""
        if self.planned is None:
            return i, "send" if i % 2 else "track", f"w{n}-{i}@example.test"
        with self.lock:
            k, kind = next(self.planned, (None, None))
        if k is None or self.stopping.wait(max(self.started + k * self.interval - time.monotonic(), 0)):
            return None
        return k, kind, f"{kind}-{k}@example.test"

    def _run(self, n: int) -> None:
        clients = [httpx.Client(base_url=base, timeout=30) for base in self.bases]
        try:
            i = 0
            while not self.stopping.is_set():
                i += 1
                if (request := self._next(n, i)) is None:
                    return
                k, kind, email = request
                headers = {"Authorization": f"Bearer {self.keys[kind]}"}
                if k % 3 == 0:
                    headers["Idempotency-Key"] = f"{kind}-{email}"
                if kind == "send":
                    body = {"to": email, "from": self.sender, "subject": f"Hi {email}", "body": "<p>Hi</p>"}
                else:
                    body = {"email": email, "event": "visit", "data": {"plan": "pro"}}
                try:
                    client = clients[k % len(clients)]
                    status = client.post(f"/v1/{kind}", json=body, headers=headers).status_code
                except httpx.HTTPError:
                    status = 0
                self.answers[(kind, email)] = status
        finally:
            for client in clients:
                client.close()

    def answered(self, kind: str, accepted: bool = True) -> set[str]:
        """The addresses of `kind` whose request was accepted (2xx), or, with `accepted=False`, got no answer."""
        return {
            email
            for (k, email), status in self.answers.items()
            if k == kind and ((200 <= status < 300) if accepted else status == 0)
        }
