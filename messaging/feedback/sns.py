"""Amazon SNS, which carries SES notifications: message signatures, the topic allow-list and subscription
confirmation, none of which Anymail does itself (it checks only that the SNS headers match the body).

A message is accepted only when its topic is on `FEEDBACK_SES_TOPIC_ARNS` and its signature verifies against the
certificate SNS names, fetched over https from an SNS host of the topic's own region and nowhere else (no redirects,
a bounded size), so a forged `SigningCertURL` can neither pass nor make us fetch an arbitrary address; and only
while it is at most an hour old (`MAX_AGE`).
"""

import base64
import hashlib
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import requests
from anymail.exceptions import AnymailWebhookValidationFailure
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from django.conf import settings
from django.core.cache import cache

_SNS_HOST = re.compile(r"sns\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?")
_CERT_PATH = re.compile(r"/SimpleNotificationService-[A-Za-z0-9]+\.pem")
_ARN = re.compile(r"arn:aws(?:-[a-z]+)*:sns:([a-z0-9-]+):\d{12}:[A-Za-z0-9_.-]{1,256}")
_SIGNED_KEYS = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
    "UnsubscribeConfirmation": ("Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"),
}
_HASHES = {"1": hashes.SHA1, "2": hashes.SHA256}
_CERT_MAX_BYTES = 16 * 1024
_CERT_CACHE_SECONDS = 24 * 3600
_TIMEOUT_SECONDS = 10
# SNS signs the time it published a message, and retries an HTTP/S delivery for an hour at most (a hard limit of
# its delivery policies). An older message is a replay: once its receipt is purged (FEEDBACK_RECEIPT_RETENTION_DAYS)
# nothing else would stop it from acting again (a bounce suppressing an address its owner has since fixed).
MAX_AGE = timedelta(hours=1)


class SnsRejected(AnymailWebhookValidationFailure):
    """The message is not from an allowed topic, or not provably from SNS: answered 403."""


def _region_of(topic_arn: str) -> str:
    match = _ARN.fullmatch(topic_arn or "")
    if match is None:
        raise SnsRejected(f"Malformed topic ARN {topic_arn!r}")
    return match.group(1)


def _aws_url(url: str, *, region: str) -> tuple[str, str]:
    """Check that `url` is plain https to the SNS host of `region` (no port, credentials or fragment); return its
    path and query."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SnsRejected(f"Malformed SNS URL {url!r}") from exc
    host = _SNS_HOST.fullmatch(parts.hostname or "")
    if (
        parts.scheme != "https"
        or host is None
        or host.group(1) != region
        or port is not None
        or parts.username is not None
        or parts.fragment
        or parts.netloc != parts.hostname
    ):
        raise SnsRejected(f"Not an SNS URL of region {region}: {url!r}")
    return parts.path, parts.query


def _http_get(url: str, *, max_bytes: int) -> bytes:
    response = requests.get(url, timeout=_TIMEOUT_SECONDS, allow_redirects=False, stream=True)
    try:
        response.raise_for_status()
        body = response.raw.read(max_bytes + 1, decode_content=True)
    finally:
        response.close()
    if len(body) > max_bytes:
        raise SnsRejected(f"Response from {url} is larger than {max_bytes} bytes")
    return body


def _certificate(url: str, *, region: str) -> x509.Certificate:
    path, query = _aws_url(url, region=region)
    if not _CERT_PATH.fullmatch(path) or query:
        raise SnsRejected(f"Not an SNS signing certificate: {url!r}")
    key = "sns-cert:" + hashlib.sha256(url.encode()).hexdigest()
    pem = cache.get(key)
    if pem is None:
        pem = _http_get(url, max_bytes=_CERT_MAX_BYTES)
        cache.set(key, pem, _CERT_CACHE_SECONDS)
    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise SnsRejected(f"Unreadable SNS signing certificate at {url}") from exc
    now = datetime.now(UTC)
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise SnsRejected(f"SNS signing certificate at {url} is not valid now")
    return certificate


def _string_to_sign(message: dict) -> bytes:
    keys = _SIGNED_KEYS.get(message.get("Type"))
    if keys is None:
        raise SnsRejected(f"Unknown SNS message type {message.get('Type')!r}")
    try:
        return "".join(
            f"{key}\n{message[key]}\n" for key in keys if key != "Subject" or message.get("Subject") is not None
        ).encode()
    except KeyError as exc:
        raise SnsRejected(f"SNS message without {exc.args[0]}") from exc


def _check_age(message: dict) -> None:
    timestamp = message.get("Timestamp")
    try:
        published = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError) as exc:
        raise SnsRejected(f"Malformed SNS timestamp {timestamp!r}") from exc
    if published.tzinfo is None:
        raise SnsRejected(f"SNS timestamp {timestamp!r} has no time zone")
    if datetime.now(UTC) - published > MAX_AGE:
        raise SnsRejected(f"SNS message published at {timestamp} is more than an hour old")


def sns_message_check(message: dict) -> None:
    """Raise SnsRejected unless the message comes from SNS, on a topic of the allow-list, within the last hour."""
    if not isinstance(message, dict):
        raise SnsRejected("An SNS message is a JSON object")
    topic_arn = message.get("TopicArn")
    if topic_arn not in settings.FEEDBACK_SES_TOPIC_ARNS:
        raise SnsRejected(f"SNS topic {topic_arn!r} is not on FEEDBACK_SES_TOPIC_ARNS")
    region = _region_of(topic_arn)
    _check_age(message)  # before the certificate is fetched: a replay costs nothing; a recent one is verified below
    algorithm = _HASHES.get(str(message.get("SignatureVersion")))
    if algorithm is None:
        raise SnsRejected(f"Unsupported SNS signature version {message.get('SignatureVersion')!r}")
    certificate = _certificate(str(message.get("SigningCertURL", "")), region=region)
    try:
        signature = base64.b64decode(message.get("Signature", ""), validate=True)
        certificate.public_key().verify(signature, _string_to_sign(message), padding.PKCS1v15(), algorithm())
    except (InvalidSignature, ValueError, TypeError) as exc:
        raise SnsRejected("SNS message signature does not verify") from exc


def sns_subscription_confirm(message: dict) -> None:
    """Confirm a subscription of an allowed topic (checked before) by fetching its SubscribeURL, which must be the
    ConfirmSubscription call of that very topic on its region's SNS host."""
    topic_arn = message["TopicArn"]
    url = str(message.get("SubscribeURL", ""))
    path, query = _aws_url(url, region=_region_of(topic_arn))
    params = parse_qs(query)
    if path != "/" or params.get("Action") != ["ConfirmSubscription"] or params.get("TopicArn") != [topic_arn]:
        raise SnsRejected(f"Not a subscription confirmation of {topic_arn}: {url!r}")
    _http_get(url, max_bytes=64 * 1024)
