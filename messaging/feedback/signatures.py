"""Timestamped HMAC-SHA256 signatures: the generic webhook's, and Resend's (the Svix scheme, checked here so that
the svix package is not a dependency). Both sign `<timestamp>.<raw body>` (Svix prefixes the message id), refuse a
timestamp outside the tolerance (a captured request cannot be replayed later), and compare in constant time."""

import binascii
import hashlib
import hmac
import time

from core import standard_webhooks


def hmac_sha256(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def timestamp_fresh(value: str, *, tolerance_seconds: int) -> bool:
    try:
        return abs(time.time() - int(value)) <= tolerance_seconds
    except (TypeError, ValueError):
        return False


def generic_signature_valid(*, secret: str, timestamp: str, signature: str, body: bytes, tolerance: int) -> bool:
    """`X-Herald-Signature: v1=<hex of HMAC-SHA256(secret, "<X-Herald-Timestamp>.<body>")>`."""
    if not secret or not timestamp_fresh(timestamp, tolerance_seconds=tolerance):
        return False
    expected = "v1=" + hmac_sha256(secret.encode(), timestamp.encode() + b"." + body).hex()
    return hmac.compare_digest(expected, signature or "")


def svix_signature_valid(*, secret: str, headers, body: bytes, tolerance: int) -> bool:
    """Svix: `svix-signature` holds space-separated `v1,<base64 HMAC>` over `<svix-id>.<svix-timestamp>.<body>`,
    keyed with the base64 part of the `whsec_...` secret."""
    message_id, timestamp = headers.get("svix-id", ""), headers.get("svix-timestamp", "")
    if not message_id or not timestamp_fresh(timestamp, tolerance_seconds=tolerance):
        return False
    try:
        expected = standard_webhooks.signature(secret=secret, webhook_id=message_id, timestamp=timestamp, body=body)
    except binascii.Error:
        return False
    offered = [item.partition(",") for item in headers.get("svix-signature", "").split()]
    return any(version == "v1" and hmac.compare_digest(expected, value) for version, _, value in offered)
