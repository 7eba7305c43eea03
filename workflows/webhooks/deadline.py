"""One wall-clock deadline for a whole webhook call, enforced beneath httpx, on every socket operation.

A per-operation timeout bounds each wait, not the exchange: a receiver that sends a byte of its headers every
second never lets a read time out, and h11 reads headers up to 100 KiB. Here every operation (the connect, the TLS
handshake, each send and each read) waits at most what is left until the deadline, and none starts once it has
passed, so the call ends at the deadline whatever the receiver does: it only has to notice (the wait in progress
returns then) and close its socket.

`DeadlineBackend` is an httpcore network backend: httpcore's own sockets and streams, with the timeouts cut.
"""

import socket
import ssl
import time

import httpcore


class Deadline:
    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds

    def left(self, expired: type[Exception]) -> float:
        """The seconds left; raises `expired` once there are none."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise expired("the call's deadline passed")
        return left


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend, every timeout replaced by what is left of `deadline` (the timeouts httpx
    passes are ignored: the client sets none)."""

    def __init__(self, deadline: Deadline):
        self._deadline = deadline
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host,
            port,
            timeout=self._deadline.left(httpcore.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._deadline)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline):
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # One recv (on a TLS socket, one record read, which Python bounds as a whole).
        return self._stream.read(max_bytes, timeout=self._deadline.left(httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # Not httpcore's write, which gives each send of its loop the whole timeout again: a receiver that takes
        # the request a few bytes at a time would stretch it. Each send here waits only for what is left.
        sock: socket.socket = self._stream.get_extra_info("socket")
        view = memoryview(buffer)
        while view:
            sock.settimeout(self._deadline.left(httpcore.WriteTimeout))
            try:
                view = view[sock.send(view) :]
            except TimeoutError as exc:
                raise httpcore.WriteTimeout(exc) from exc
            except OSError as exc:
                raise httpcore.WriteError(exc) from exc

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        # The whole handshake under one timeout: Python's ssl module keeps its own deadline across its reads.
        stream = self._stream.start_tls(
            ssl_context, server_hostname=server_hostname, timeout=self._deadline.left(httpcore.ConnectTimeout)
        )
        return _DeadlineStream(stream, self._deadline)

    def get_extra_info(self, info: str):
        return self._stream.get_extra_info(info)
