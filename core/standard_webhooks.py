"""Standard Webhooks signatures (https://www.standardwebhooks.com): what a receiver needs to trust a call.

Each call carries `webhook-id` (the same on every retry of one delivery, so the receiver can drop duplicates),
`webhook-timestamp` (Unix seconds, so it can refuse old replays) and `webhook-signature: v1,<base64 HMAC-SHA256>`
over `<id>.<timestamp>.<body>`, keyed with the bytes behind the project's `whsec_<base64>` secret. Resend's Svix signatures are the same scheme
under `svix-` header names, so the feedback webhooks check them with `signature` too.
"""

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def secret_generate() -> str:
    """A new secret: `whsec_` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signature(*, secret: str, webhook_id: str, timestamp: str | int, body: bytes) -> str:
    """The base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`; raises binascii.Error for a secret that is not base64."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signature_headers(*, secret: str, webhook_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    value = signature(secret=secret, webhook_id=webhook_id, timestamp=timestamp, body=body)
    return {"webhook-id": webhook_id, "webhook-timestamp": str(timestamp), "webhook-signature": f"v1,{value}"}
