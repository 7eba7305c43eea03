"""Real webhook receivers for tests: an HTTP(S) server on a loopback address that records every connection and
request, and answers each path as the test says (200 "ok" unless told otherwise)."""

import datetime
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds to wait before answering, and an answer that never ends (written until the client hangs up).
    delay: float = 0.0
    endless: bool = False


def redirect(location: str, status: int = 302) -> Answer:
    return Answer(status=status, body=b"", headers={"Location": location})


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes


class Receiver:
    def __init__(self, host: str = "127.0.0.1", *, tls: ssl.SSLContext | None = None):
        self.host = host
        self.answers: dict[str, Answer] = {}
        self.requests: list[Received] = []
        self.connections = 0
        self.endless_bytes_sent = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name.lower(): value for name, value in self.headers.items()}
                owner.requests.append(Received(self.command, self.path, headers, body))
                reply = owner.answers.get(self.path, Answer())
                time.sleep(reply.delay)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.endless:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    owner.write_endlessly(self.wfile)
                    return
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
            daemon_threads = True

            def get_request(self):
                sock, address = super().get_request()
                owner.connections += 1
                return sock, address

            def handle_error(self, request, client_address):
                pass  # a client that hangs up early (the excerpt is read) is expected

        self.server = Server((host, 0), Handler, bind_and_activate=True)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        # A short poll: stopping waits for the serving loop to notice.
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def url(self, path: str = "/", *, host: str | None = None, scheme: str | None = None) -> str:
        host = host or (f"[{self.host}]" if ":" in self.host else self.host)
        scheme = scheme or ("https" if isinstance(self.server.socket, ssl.SSLSocket) else "http")
        return f"{scheme}://{host}:{self.port}{path}"

    def write_endlessly(self, stream) -> None:
        chunk = b"x" * 1024
        try:
            while self.endless_bytes_sent < 64 * 1024 * 1024:
                stream.write(chunk)
                self.endless_bytes_sent += len(chunk)
        except OSError:
            pass

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass(frozen=True)
class Certificates:
    """A test CA (its certificate in `ca_file`) and a server context whose certificate it signed for `names`; the
    server records the SNI name each client sends in `sni`."""

    ca_file: Path
    context: ssl.SSLContext
    sni: list


def certificates(folder: Path, *names: str) -> Certificates:
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Herald test CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key, now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        _builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]), ca_name, key, now)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    sni: list = []
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    return Certificates(ca_file=ca_file, context=context, sni=sni)


def _builder(subject: x509.Name, issuer: x509.Name, key, now: datetime.datetime) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


class RawReceiver:
    """A TCP listener on 127.0.0.1 that hands each connection to `serve(conversation)` in a thread of its own, for
    receivers that misbehave below HTTP: they trickle, stall or hang. Each conversation ends after `limit` seconds
    at the latest, so a client that never gives up cannot keep a test waiting for long."""

    def __init__(self, serve, *, limit: float = 8.0):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()
        self.conversations: list[Conversation] = []
        self._serve, self._limit = serve, limit
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/", *, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        self.listener.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conversation = Conversation(sock, len(self.conversations), time.monotonic() + self._limit, self.stopping)
            self.conversations.append(conversation)
            threading.Thread(target=self._run, args=(conversation,), daemon=True).start()

    def _run(self, conversation: "Conversation") -> None:
        try:
            self._serve(conversation)
        except OSError:
            pass  # the client hung up
        finally:
            conversation.ended = time.monotonic()
            conversation.sock.close()

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()


@dataclass
class Conversation:
    """One connection of a `RawReceiver`: the `n`th, open until `ends` (monotonic) at the latest; `accepted` and
    `ended` (monotonic) say how long it lasted, `head` is the request's head once read."""

    sock: socket.socket
    n: int
    ends: float
    stopping: threading.Event
    accepted: float = field(default_factory=time.monotonic)
    ended: float | None = None
    head: bytes = b""

    def over(self) -> bool:
        return self.stopping.is_set() or time.monotonic() >= self.ends

    def read_request(self) -> bytes:
        """The request's head and its body (by Content-Length), as fast as they come."""
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._received(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        self.head = head
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:
            body += self._received(65536)
        return head

    def read_slowly(self, size: int, interval: float) -> None:
        """Take the request `size` bytes every `interval` seconds, until the client hangs up."""
        while not self.over():
            self._received(size)
            self.stopping.wait(interval)

    def trickle(self, data: bytes, interval: float) -> None:
        """Send `data` one byte every `interval` seconds, until the client hangs up."""
        for byte in data:
            if self.over():
                return
            self.sock.sendall(bytes([byte]))
            # The request is in: what becomes readable now is the client hanging up, seen at once.
            if select.select([self.sock], [], [], interval)[0]:
                self._received(65536)

    def hang(self) -> None:
        """Keep the connection open, saying nothing, until the client hangs up."""
        while not self.over():
            self.sock.settimeout(0.05)
            try:
                if not self.sock.recv(65536):
                    return
            except TimeoutError:
                continue

    def _received(self, size: int) -> bytes:
        self.sock.settimeout(max(0.01, self.ends - time.monotonic()))
        chunk = self.sock.recv(size)
        if not chunk:
            raise ConnectionResetError("the client hung up")
        return chunk
