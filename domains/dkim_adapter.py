"""dkimpy, fast enough to sign every message: the one module that reaches into dkimpy's internals.

dkimpy's public API (`dkim.DKIM(message).sign(...)`) computes everything in Python; it has no hook for the three
costly steps of a signature, so this module takes them over from the outside:

1. The RSA step: dkimpy signs with Python integers (5-10 ms per 2048-bit signature on this hardware, which would
   cap delivery near 200 messages/s per core). `dkim.RSASSA_PKCS1_v1_5_sign` is replaced by the identical
   PKCS#1 v1.5 signature from OpenSSL (`cryptography`, 0.3 ms).
2. The key: dkimpy parses the PEM key (pure-Python ASN.1, 0.3 ms) on every signature. A sending domain signs
   thousands of messages with one key and dkimpy only reads the parsed form, so `dkim.parse_pem_private_key`
   keeps it.
3. The message: `DKIM.set_message` splits the whole message into lines and joins the body back (a third of
   dkimpy's time besides the RSA step), and `DKIM.sign` then canonicalises every header although only the signed
   ones are hashed. `sign` splits the head only and gives the signer the headers it signs and the body (the two
   attributes `set_message` fills).

dkimpy still canonicalises, hashes and builds the DKIM-Signature header. Each step relies on dkimpy's internals as
of `DKIMPY_VERSION` (requirements.txt pins it); `domains/tests/test_dkim_adapter.py` fails when they change
underneath: another version, other parameters of the replaced functions, dkimpy no longer calling them, or a
signature that differs from dkimpy's own or fails its verifier. Should the replaced functions be missing or take
other parameters at start-up, dkimpy's own are kept (slower, still correct) and a warning is logged.
"""

import inspect
import logging
from functools import lru_cache

import dkim
import dkim.crypto
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa, utils

logger = logging.getLogger(__name__)
DKIMPY_VERSION = "1.1.8"
# The dkimpy functions replaced, with the parameters they take in that release.
REPLACED = {"RSASSA_PKCS1_v1_5_sign": ("hash", "private_key"), "parse_pem_private_key": ("data",)}
_DIGESTS = {"sha256": hashes.SHA256, "sha1": hashes.SHA1}


@lru_cache(maxsize=256)
def _openssl_key(n: int, e: int, d: int, p: int, q: int, dmp1: int, dmq1: int, iqmp: int) -> rsa.RSAPrivateKey:
    return rsa.RSAPrivateNumbers(p, q, d, dmp1, dmq1, iqmp, rsa.RSAPublicNumbers(e, n)).private_key()


def openssl_pkcs1_sign(digest, private_key: dict) -> bytes:
    """dkimpy's RSASSA-PKCS1-v1_5 signature primitive, computed by OpenSSL."""
    key = _openssl_key(
        private_key["modulus"],
        private_key["publicExponent"],
        private_key["privateExponent"],
        private_key["prime1"],
        private_key["prime2"],
        private_key["exponent1"],
        private_key["exponent2"],
        private_key["coefficient"],
    )
    algorithm = _DIGESTS[digest.name.lower()]()
    return key.sign(digest.digest(), padding.PKCS1v15(), utils.Prehashed(algorithm))


def _install() -> bool:
    """Put the replacements in dkimpy's namespace, where `DKIM.sign` looks them up; False if dkimpy changed."""
    for name, parameters in REPLACED.items():
        original = getattr(dkim.crypto, name, None)
        if original is None or tuple(inspect.signature(original).parameters) != parameters:
            logger.warning("dkimpy's %s is not the one this adapter replaces; DKIM signing stays slow", name)
            return False
    dkim.RSASSA_PKCS1_v1_5_sign = openssl_pkcs1_sign
    dkim.parse_pem_private_key = lru_cache(maxsize=256)(dkim.crypto.parse_pem_private_key)
    return True


installed = _install()


def sign(
    message: bytes,
    *,
    selector: bytes,
    domain: bytes,
    private_key: bytes,
    headers: tuple[bytes, ...],
    canonicalize: tuple[bytes, bytes],
) -> bytes:
    """dkimpy's `DKIM.sign` of `message`: the DKIM-Signature header (CRLF-terminated) over those of `headers`
    (lower case) the message has, From at least."""
    signer = dkim.DKIM(linesep=b"\r\n")
    signer.headers, signer.body = _signed_parts(message, headers)
    present = {name.lower() for name, _ in signer.headers}
    return signer.sign(
        selector,
        domain,
        private_key,
        canonicalize=canonicalize,
        include_headers=[name for name in headers if name in present] or [b"from"],
    )


def _signed_parts(message: bytes, keep: tuple[bytes, ...]) -> tuple[list[list[bytes]], bytes]:
    """dkimpy's (headers, body) of `message`, keeping only the headers named in `keep`.

    For a message with CRLF line ends only (all of ours) the head alone is split here, with dkimpy's result for the
    headers kept; any other message goes through dkimpy's parser."""
    head, separator, body = message.partition(b"\r\n\r\n")
    if not separator or message.count(b"\n") != message.count(b"\r\n"):
        headers, body = dkim.rfc822_parse(message)
        return [h for h in headers if h[0].lower() in keep], body
    headers: list[list[bytes]] = []
    kept = False
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t"):
            if kept:
                headers[-1][1] += line + b"\r\n"
            continue
        name, colon, value = line.partition(b":")
        if not colon:
            raise dkim.MessageFormatError(f"Unexpected characters in RFC822 header: {line!r}")
        kept = name.lower() in keep
        if kept:
            headers.append([name, value + b"\r\n"])
    return headers, body
