"""A real DNS server on loopback for tests, answering UDP and TCP from a zone dict the test writes.

    zone[("example.com", "MX")] = ["10 mx.example.com."]
    zone[("sel._domainkey.example.com", "TXT")] = ["v=DKIM1; k=rsa; p=..."]

A name present under any type answers NOERROR (empty for other types); a name that is an ancestor of a zone name
is an empty non-terminal (NOERROR); anything else is NXDOMAIN. `server.mode` switches to "servfail" or "silent"
(never answers, so clients time out). Other apps may reuse it through `domains.tests.conftest`'s fixtures.
"""

import socket
import socketserver
import threading

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class Zone(dict):
    def name_exists(self, name: str) -> bool:
        return any(zone_name == name or zone_name.endswith("." + name) for zone_name, _ in self)


class DnsServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.zone = Zone()
        self.mode = "normal"
        self.queries: list[tuple[str, str]] = []
        self.tcp_queries = 0
        self._lock = threading.Lock()
        server = self

        class Udp(socketserver.BaseRequestHandler):
            def handle(self):
                data, sock = self.request
                wire = server.answer(data, udp=True)
                if wire is not None:
                    sock.sendto(wire, self.client_address)

        class Tcp(socketserver.BaseRequestHandler):
            def handle(self):
                length = self.request.recv(2)
                if len(length) < 2:
                    return
                size = int.from_bytes(length, "big")
                data = b""
                while len(data) < size:
                    chunk = self.request.recv(size - len(data))
                    if not chunk:
                        return
                    data += chunk
                server.tcp_queries += 1
                wire = server.answer(data)
                if wire is not None:
                    self.request.sendall(len(wire).to_bytes(2, "big") + wire)

        # UDP and TCP on one port: take a free UDP port, retry while its TCP twin is taken.
        for _attempt in range(50):
            self.udp = socketserver.ThreadingUDPServer((host, port), Udp)
            self.port = self.udp.server_address[1]
            self.tcp = socketserver.ThreadingTCPServer((host, self.port), Tcp, bind_and_activate=False)
            self.tcp.allow_reuse_address = True
            try:
                self.tcp.server_bind()
            except OSError:
                self.tcp.server_close()
                self.udp.server_close()
                continue
            self.tcp.server_activate()
            break
        else:
            raise OSError("no free port for the test DNS server")
        self.address = f"{host}:{self.port}"
        for srv in (self.udp, self.tcp):
            srv.daemon_threads = True
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def reset(self) -> None:
        self.zone.clear()
        self.mode = "normal"
        self.queries.clear()
        self.tcp_queries = 0

    def stop(self) -> None:
        for srv in (self.udp, self.tcp):
            srv.shutdown()
            srv.server_close()

    def answer(self, data: bytes, *, udp: bool = False) -> bytes | None:
        if self.mode == "silent":
            return None
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        rdtype = dns.rdatatype.to_text(question.rdtype)
        with self._lock:
            self.queries.append((name, rdtype))
        if self.mode == "servfail":
            response.set_rcode(dns.rcode.SERVFAIL)
            return response.to_wire()
        records = self.zone.get((name, rdtype))
        if records:
            rrset = dns.rrset.RRset(question.name, dns.rdataclass.IN, question.rdtype)
            for text in records:
                rrset.add(_rdata(question.rdtype, text), ttl=300)
            response.answer.append(rrset)
        elif not self.zone.name_exists(name):
            response.set_rcode(dns.rcode.NXDOMAIN)
        if not udp:
            return response.to_wire(max_size=65535)
        # Over UDP an answer larger than the client's buffer is truncated (TC): the client must retry over TCP.
        limit = max(512, query.payload) if query.edns >= 0 else 512
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            truncated = dns.message.make_response(query)
            truncated.flags |= dns.flags.AA | dns.flags.TC
            return truncated.to_wire()


def _rdata(rdtype, text: str):
    if rdtype == dns.rdatatype.TXT:
        # Long values are published as several strings of at most 255 bytes, as DNS providers do.
        chunks = [text[i : i + 255] for i in range(0, len(text), 255)] or [""]
        text = " ".join('"' + chunk.replace("\\", "\\\\").replace('"', '\\"') + '"' for chunk in chunks)
    return dns.rdata.from_text(dns.rdataclass.IN, rdtype, text, origin=dns.name.root, relativize=False)


class SilentServer:
    """A UDP socket that never answers: every lookup against it times out."""

    def __init__(self, host: str = "127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.address = f"{host}:{self.sock.getsockname()[1]}"

    def stop(self) -> None:
        self.sock.close()
