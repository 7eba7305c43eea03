"""Clients that call `/v1/send` and `/v1/track` of a served instance until stopped, for tests and bench scripts
that break the service under load and then check what it accepted."""

import threading

import httpx


class Load:
    """Threads that call /v1/send and /v1/track, each request with a recipient or contact of its own and every third
    with an Idempotency-Key (the view answers those), and remember each answer's status (0: no answer, the
    connection was cut) by kind and address."""

    def __init__(self, base: str, *, secret_key: str, public_key: str, sender: str, threads: int = 4):
        self.base, self.sender = base, sender
        self.keys = {"send": secret_key, "track": public_key}
        self.answers: dict[tuple[str, str], int] = {}
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(threads)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join()

    def _run(self, n: int) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            i = 0
            while not self.stopping.is_set():
                i += 1
                email = f"w{n}-{i}@example.test"
                kind = "send" if i % 2 else "track"
                headers = {"Authorization": f"Bearer {self.keys[kind]}"}
                if i % 3 == 0:
                    headers["Idempotency-Key"] = f"{kind}-{email}"
                if kind == "send":
                    body = {"to": email, "from": self.sender, "subject": f"Hi {email}", "body": "<p>Hi</p>"}
                else:
                    body = {"email": email, "event": "visit", "data": {"plan": "pro"}}
                try:
                    status = client.post(f"/v1/{kind}", json=body, headers=headers).status_code
                except httpx.HTTPError:
                    status = 0
                self.answers[(kind, email)] = status

    def answered(self, kind: str, accepted: bool = True) -> set[str]:
        """The addresses of `kind` whose request was accepted (2xx), or, with `accepted=False`, got no answer."""
        return {
            email
            for (k, email), status in self.answers.items()
            if k == kind and ((200 <= status < 300) if accepted else status == 0)
        }
