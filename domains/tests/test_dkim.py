"""DKIM signatures as receivers check them: dkimpy's verifier accepts what `domains.dkim.sign` writes and refuses
it once the body or a signed header changes; the key is decrypted and parsed once per process."""

import base64

import dkim
import pytest
from cryptography.fernet import InvalidToken
from cryptography.hazmat.primitives import serialization

from domains import dkim as domain_dkim

HEAD = [
    "X-Mailer: not signed",
    "From: Alice <news@alice.test>",
    "To: bob@example.net",
    "Subject: a subject folded",
    "  over\ttwo   lines",
    "Date: Sun, 22 Nov 2026 01:02:03 +0000",
    "Message-ID: <1@alice.test>",
    "MIME-Version: 1.0",
    "List-Unsubscribe: <https://alice.test/u/" + "x" * 200 + ">",
    "Content-Type: text/plain; charset=utf-8",
]


@pytest.fixture(scope="module")
def key() -> tuple[str, bytes]:
    """(the encrypted private key as stored, the DKIM record that publishes its public half)."""
    public, encrypted = domain_dkim.generate_key_pair()
    return encrypted, domain_dkim.record_value(public).encode()


def message(linesep: str = "\r\n", head=HEAD, body=("Hello Bob,", ". a line with a leading dot", "", "")) -> bytes:
    return linesep.join([*head, "", *body]).encode()


def _verifies(key, signed: bytes) -> bool:
    def lookup(name, timeout=5):
        return key[1] if name == b"hr-abc123._domainkey.alice.test." else None

    return dkim.verify(signed, dnsfunc=lookup)


def _sign(key, raw: bytes) -> bytes:
    return domain_dkim.sign(message=raw, selector="hr-abc123", domain_name="alice.test", private_key_encrypted=key[0])


@pytest.mark.parametrize(
    "raw",
    [
        message(),
        message(body=()),  # no body at all
        message(body=("no line end at the end",)),
        message(head=[*HEAD, "To: carol@example.net"]),  # the last instance is the one signed
        message(linesep="\n"),  # not CRLF throughout: dkimpy signs it
    ],
    ids=["message", "empty body", "unterminated body", "repeated header", "bare LF"],
)
def test_a_signed_message_verifies(key, raw):
    header = _sign(key, raw)
    assert header.startswith(b"DKIM-Signature: ") and header.endswith(b"\r\n")
    assert all(len(line) <= 78 for line in header.split(b"\r\n"))
    assert _verifies(key, header + raw)


def test_the_signature_covers_the_signed_headers_present_and_the_body(key):
    raw = message()
    header = _sign(key, raw)
    tags = dict(tag.strip().split("=", 1) for tag in header.decode().split(":", 1)[1].replace("\r\n", "").split(";"))
    assert tags["h"].replace(" ", "") == "from:to:subject:date:message-id:mime-version:content-type:list-unsubscribe"
    assert (tags["a"], tags["c"], tags["d"], tags["s"]) == ("rsa-sha256", "relaxed/simple", "alice.test", "hr-abc123")
    for changed in (
        raw.replace(b"Hello Bob", b"Hello Eve"),
        raw.replace(b"To: bob@example.net", b"To: eve@example.net"),
        raw.replace(b"over\ttwo", b"under two"),
        raw + b"appended\r\n",
    ):
        assert not _verifies(key, header + changed)
    # Relaxed headers: a relay that refolds or re-spaces a header breaks nothing; unsigned headers are free.
    refolded = raw.replace(
        b"Subject: a subject folded\r\n  over\ttwo   lines", b"Subject:  a subject\r\n folded over two lines"
    )
    assert _verifies(key, header + refolded.replace(b"X-Mailer: not signed", b"X-Mailer: changed"))


def test_the_key_is_decrypted_and_parsed_once_per_process(key, monkeypatch):
    domain_dkim._signing_key.cache_clear()
    loads = []
    load = serialization.load_pem_private_key
    monkeypatch.setattr(serialization, "load_pem_private_key", lambda *a, **k: loads.append(1) or load(*a, **k))
    for _ in range(3):
        assert _verifies(key, _sign(key, message()) + message())
    assert len(loads) == 1


def test_a_key_encrypted_under_a_former_secret_signs_while_it_is_a_fallback(key, settings):
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-" + base64.b64encode(b"x" * 40).decode()
    assert _verifies(key, _sign(key, message()) + message())
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(InvalidToken):
        _sign(key, message())
