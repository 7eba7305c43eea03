"""One webhook call: signed, guarded at every hop, bounded in time and in what it keeps of the answer."""

import functools
import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpcore
import httpx
from django.conf import settings

from core.standard_webhooks import signature_headers
from workflows.webhooks.deadline import Deadline, DeadlineBackend
from workflows.webhooks.guard import WebhookRefused, ascii_host, checked_address

MAX_REDIRECTS = 5
RESPONSE_LIMIT_BYTES = 10 * 1024
# How far past WEBHOOK_TIMEOUT_SECONDS a call may end: at its deadline it only notices (the wait in progress returns)
# and closes its connection. The tests hold every way of stalling a call to this bound.
DEADLINE_SLACK_SECONDS = 0.5
USER_AGENT = "Herald-Webhooks/1"
# Set by the sender itself: a step's headers must not contradict the body, the pinned connection or the signature.
_OWN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
    | {"webhook-id", "webhook-timestamp", "webhook-signature"}
)


@dataclass(frozen=True)
class WebhookResult:
    status_code: int | None
    # The first RESPONSE_LIMIT_BYTES of the final answer's body, decoded as UTF-8 (a cut character is replaced).
    body: str
    error: str | None
    # Worth another attempt: network errors, timeouts and 5xx. Refusals and other answers are final.
    retryable: bool

    @property
    def success(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def webhook_call_limit() -> float:
    """The longest one call can take, in seconds: its deadline and the slack past it."""
    return settings.WEBHOOK_TIMEOUT_SECONDS + DEADLINE_SLACK_SECONDS


class PinnedTransport(httpx.BaseTransport):
    """Sends each request to the address the guard checked for its host, keeping the name in the `Host` header and
    in TLS (SNI and the certificate check), so nothing resolves the name again; the name's lookups, the
    connections and everything sent and read on them share the call's `deadline`."""

    def __init__(self, deadline: Deadline):
        self._deadline = deadline
        # No keep-alive: a connection verified for one name is never reused for another on the same address.
        context = _tls_context()
        self._transport = httpx.HTTPTransport(verify=context, limits=httpx.Limits(max_keepalive_connections=0))
        # httpx's transport takes no network backend (it builds its pool itself): its pool is replaced by the same
        # pool on the backend that holds every socket operation to the deadline.
        self._transport._pool = httpcore.ConnectionPool(
            ssl_context=context, max_keepalive_connections=0, network_backend=DeadlineBackend(deadline)
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        address = checked_address(request.url, timeout=self._deadline.left(httpx.ConnectTimeout))
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=str(address)),
            headers=request.headers,
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": ascii_host(request.url)},
        )
        return self._transport.handle_request(pinned)

    def close(self) -> None:
        self._transport.close()


def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes a tenth of a second of CPU: once per process, and again only when the bundle that
    # httpx honours (SSL_CERT_FILE, SSL_CERT_DIR) changes.
    return _tls_context_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context_for(_ca_file: str | None, _ca_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()


def webhook_send(
    *, url: str, method: str, headers: Mapping[str, str], body: bytes, secret: str, webhook_id: str
) -> WebhookResult:
    """Call `url` once, signed with `secret` (Standard Webhooks); never raises for what the network or the
    receiver does.

    1. A step's headers cannot replace the signature or the framing headers (`_OWN_HEADERS`).
    2. Each hop (the first request and up to MAX_REDIRECTS redirects) is checked by the guard before it connects;
       a refusal or one redirect too many ends the call, not retryable.
    3. A redirect is followed only within the first URL's origin (scheme, host, port): the step's headers and the
       signature are meant for that receiver alone, so a redirect elsewhere ends the call, not retryable.
    4. The whole call gets one deadline, WEBHOOK_TIMEOUT_SECONDS from its start: the name lookups, connects, TLS
       handshakes, the request and the answer of every hop (`workflows.webhooks.deadline`). Past it the call is a
       timeout, retryable, whatever part of the answer had come; it ends within `webhook_call_limit()`.
    5. Reading the answer stops once RESPONSE_LIMIT_BYTES are in.
    """
    deadline = Deadline(settings.WEBHOOK_TIMEOUT_SECONDS)
    own = {name: value for name, value in headers.items() if name.lower() not in _OWN_HEADERS}
    signature = signature_headers(secret=secret, webhook_id=webhook_id, timestamp=int(time.time()), body=body)
    # The body is read raw: an encoded answer could inflate far beyond the bytes received.
    request_headers = {**own, "Accept-Encoding": "identity", **signature}
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return _failed(f"refused: an invalid URL ({exc})")
    # No timeout of httpx's own: the transport holds every wait to the deadline, the one bound.
    client = httpx.Client(
        transport=PinnedTransport(deadline),
        trust_env=False,
        timeout=None,  # noqa: S113
        headers={"User-Agent": USER_AGENT},
    )
    with client:
        try:
            request = client.build_request(method, target, headers=request_headers, content=body)
            return _exchange(client, request)
        except WebhookRefused as exc:
            return _failed(f"refused: {exc}")
        except (httpx.LocalProtocolError, UnicodeEncodeError) as exc:
            # Our own request is malformed (a header the protocol forbids): sending it again changes nothing.
            return _failed(f"invalid request: {exc}")
        except httpx.TimeoutException:
            return _failed("timed out", retryable=True)
        except httpx.TransportError as exc:
            return _failed(f"network error: {exc}", retryable=True)


def _exchange(client: httpx.Client, request: httpx.Request) -> WebhookResult:
    origin = _origin(request.url)
    for _hop in range(MAX_REDIRECTS + 1):
        response = client.send(request, stream=True, follow_redirects=False)
        try:
            if response.next_request is None:
                return WebhookResult(
                    status_code=response.status_code,
                    body=_excerpt(response).decode("utf-8", "replace"),
                    error=None if response.is_success else f"HTTP {response.status_code}",
                    retryable=response.is_server_error,
                )
            request = response.next_request
            if _origin(request.url) != origin:
                # httpx would drop only Authorization on the way: the step's own headers and the signature would
                # reach whoever the redirect names.
                raise WebhookRefused(f"a redirect to another origin ({_origin_text(request.url)}) is not followed")
        finally:
            response.close()
    raise WebhookRefused(f"more than {MAX_REDIRECTS} redirects")


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    # httpx leaves out a scheme's default port (`port` is None for http://x:80/), so both spellings are one origin.
    return url.scheme, url.host, url.port


def _origin_text(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"


def _excerpt(response: httpx.Response) -> bytes:
    kept = bytearray()
    for chunk in response.iter_raw():
        kept += chunk
        if len(kept) >= RESPONSE_LIMIT_BYTES:
            break
    return bytes(kept[:RESPONSE_LIMIT_BYTES])


def _failed(error: str, *, retryable: bool = False) -> WebhookResult:
    return WebhookResult(status_code=None, body="", error=error, retryable=retryable)
