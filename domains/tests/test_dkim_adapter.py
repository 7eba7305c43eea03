"""The adapter leans on dkimpy's internals: these tests fail when dkimpy changes underneath it (another release,
other parameters of the replaced functions, dkimpy no longer calling them), and prove that a signature made through
the adapter is byte for byte dkimpy's own and passes dkimpy's verifier."""

import base64
import hashlib
import importlib.metadata
import inspect
import types

import dkim
import dkim.crypto
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from domains import dkim_adapter
from domains.dkim import SIGNED_HEADERS

CANONICALIZE = (b"relaxed", b"simple")
HEAD = [
    "X-Mailer: not signed",
    "From: Alice <news@alice.test>",
    "To: bob@example.net",
    "Subject: a subject folded",
    "  over two lines",
    "Date: Sun, 22 Nov 2026 01:02:03 +0000",
    "Message-ID: <1@alice.test>",
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
]


@pytest.fixture(scope="module")
def key() -> tuple[bytes, bytes]:
    """(private key PEM, the DKIM record that publishes its public half)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem, b"v=DKIM1; k=rsa; p=" + base64.b64encode(der)


def message(linesep: str) -> bytes:
    return linesep.join([*HEAD, "", "Hello Bob,", ". a line with a leading dot", ""]).encode()


def test_dkimpy_is_the_release_the_adapter_was_checked_against():
    # On an upgrade: read dkimpy's DomainSigner.gen_header, DKIM.sign and set_message again, then move the version.
    assert importlib.metadata.version("dkimpy") == dkim_adapter.DKIMPY_VERSION
    for name, parameters in dkim_adapter.REPLACED.items():
        assert tuple(inspect.signature(getattr(dkim.crypto, name)).parameters) == parameters
    assert dkim_adapter.installed
    assert dkim.RSASSA_PKCS1_v1_5_sign is dkim_adapter.openssl_pkcs1_sign


@pytest.mark.parametrize("algorithm", ["sha256", "sha1"])
def test_the_openssl_rsa_step_is_dkimpys_own_signature(key, algorithm):
    parsed = dkim.crypto.parse_pem_private_key(key[0])
    digest = getattr(hashlib, algorithm)(b"the canonicalised headers")
    assert dkim_adapter.openssl_pkcs1_sign(digest, parsed) == dkim.crypto.RSASSA_PKCS1_v1_5_sign(digest, parsed)


@pytest.mark.parametrize("linesep", ["\r\n", "\n"])
def test_a_message_signed_through_the_adapter_is_dkimpys_own_signature_and_verifies(key, monkeypatch, linesep):
    pem, record = key
    raw = message(linesep)
    monkeypatch.setattr(dkim, "time", types.SimpleNamespace(time=lambda: 1_795_000_000))  # the same t= twice
    # dkimpy calls the replaced functions by their names in its namespace, once each per signature.
    calls = []
    for name in dkim_adapter.REPLACED:
        replacement = getattr(dkim, name)
        monkeypatch.setattr(dkim, name, lambda *args, _r=replacement, _n=name: calls.append(_n) or _r(*args))
    header = dkim_adapter.sign(
        raw,
        selector=b"hr-abc123",
        domain=b"alice.test",
        private_key=pem,
        headers=SIGNED_HEADERS,
        canonicalize=CANONICALIZE,
    )
    assert sorted(calls) == sorted(dkim_adapter.REPLACED)

    # dkimpy alone, through its public API and its own functions.
    for name in dkim_adapter.REPLACED:
        monkeypatch.setattr(dkim, name, getattr(dkim.crypto, name))
    signed = [b"from", b"to", b"subject", b"date", b"message-id", b"mime-version", b"content-type"]
    assert header == dkim.sign(raw, b"hr-abc123", b"alice.test", pem, canonicalize=CANONICALIZE, include_headers=signed)

    def lookup(name, timeout=5):
        return record if name == b"hr-abc123._domainkey.alice.test." else None

    monkeypatch.undo()
    assert dkim.verify(header + raw, dnsfunc=lookup)
    assert not dkim.verify(header + raw.replace(b"Hello Bob", b"Hello Eve"), dnsfunc=lookup)
