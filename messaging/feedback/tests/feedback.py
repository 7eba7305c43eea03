"""Test helpers for provider feedback: sent email rows, signed SNS messages (a test certificate generated here),
signed generic-webhook requests, and a stand-in for the outbound HTTP GETs to AWS."""

import base64
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID
from django.utils import timezone

from contacts.models import Contact
from messaging.models import Email

TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:herald-feedback"
CERT_URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-7506a1e35b36ef5a444dd1a8e7cc3ed8.pem"
GENERIC_SECRET = "generic-test-secret"
BASIC_AUTH = "herald:webhook-password"


def sent_email(project, address="ann@example.test", *, provider_message_id="", **fields) -> Email:
    """An email handed to the transport (the state feedback finds it in), with its subscribed contact."""
    contact, _ = Contact.objects.get_or_create(project=project, email=address, defaults={"subscribed": True})
    email_id = uuid.uuid4()
    now = timezone.now()
    values = {
        "id": email_id,
        "project": project,
        "contact": contact,
        "to_email": address,
        "from_email": "news@alice.test",
        "subject": "Hello",
        "html": "<p>Hello</p>",
        "message_id": f"<{email_id}@alice.test>",
        "provider_message_id": provider_message_id,
        "status": Email.Status.SENT,
        "sent_at": now,
        **fields,
    }
    return Email.objects.create(**values)


def _certificate(key, *, days: int = 365) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


@dataclass
class FakeResponse:
    body: bytes
    status_code: int = 200

    @property
    def raw(self):
        return self

    def read(self, size, decode_content=True):
        return self.body[:size]

    def raise_for_status(self):
        if self.status_code >= 400:
            raise requests.HTTPError(f"{self.status_code}")

    def close(self):
        pass


@dataclass
class Aws:
    """SNS as the webhook sees it: signs messages with a test key and answers the GETs to AWS (certificate and
    SubscribeURL) in place of the network, recording them."""

    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    fetched: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.pem = _certificate(self.key)

    def get(self, url, **kwargs):
        assert kwargs.get("allow_redirects") is False and kwargs.get("timeout")
        self.fetched.append(url)
        if url.endswith(".pem"):
            return FakeResponse(self.pem)
        return FakeResponse(b"<ConfirmSubscriptionResponse/>")

    def sign(self, message: dict, *, version: str = "1") -> dict:
        keys = ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
        if message["Type"] != "Notification":
            keys = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
        text = "".join(f"{k}\n{message[k]}\n" for k in keys if k in message).encode()
        digest = hashes.SHA1() if version == "1" else hashes.SHA256()
        signature = self.key.sign(text, padding.PKCS1v15(), digest)
        return {**message, "SignatureVersion": version, "Signature": base64.b64encode(signature).decode()}

    def notification(
        self,
        ses_event: dict,
        *,
        topic_arn: str = TOPIC_ARN,
        message_id: str | None = None,
        published: datetime | None = None,
    ) -> dict:
        # The envelope of AWS's documented example (SNS "HTTP/HTTPS notification JSON format"), published now unless
        # told otherwise.
        return self.sign(
            {
                "Type": "Notification",
                "MessageId": message_id or str(uuid.uuid4()),
                "TopicArn": topic_arn,
                "Message": json.dumps(ses_event),
                "Timestamp": sns_timestamp(published),
                "SigningCertURL": CERT_URL,
                "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=x",
            }
        )


def sns_timestamp(at: datetime | None = None) -> str:
    """A time as SNS writes it in `Timestamp` (UTC, milliseconds): now unless given."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.fixture(name="aws")
def aws_fixture(monkeypatch):
    fake = Aws()
    monkeypatch.setattr(requests, "get", fake.get)
    return fake


def post_sns(client, message: dict, **headers):
    return client.post(
        "/webhooks/ses",
        json.dumps(message),
        content_type="text/plain; charset=UTF-8",
        HTTP_X_AMZ_SNS_MESSAGE_TYPE=message["Type"],
        HTTP_X_AMZ_SNS_MESSAGE_ID=message["MessageId"],
        HTTP_X_AMZ_SNS_TOPIC_ARN=message["TopicArn"],
        **headers,
    )


def ses_bounce(email: Email, *, bounce_type: str = "Permanent") -> dict:
    """AWS's documented bounce notification, for this email."""
    return {
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": bounce_type,
            "bounceSubType": "General",
            "bouncedRecipients": [
                {
                    "emailAddress": email.to_email,
                    "status": "5.1.1",
                    "action": "failed",
                    "diagnosticCode": f"smtp; 550 5.1.1 <{email.to_email}>... User unknown",
                }
            ],
            "timestamp": "2026-11-22T05:59:38.237Z",
            "feedbackId": "00000138111222aa-33322211-cccc-cccc-cccc-ddddaaaa068a-000000",
            "reportingMTA": "dns; email.example.com",
        },
        "mail": {
            "timestamp": "2026-11-22T05:59:37.000Z",
            "source": email.from_email,
            "messageId": email.provider_message_id,
            "destination": [email.to_email],
        },
    }


def ses_event(email: Email, kind: str) -> dict:
    mail = {
        "timestamp": "2026-11-22T05:59:37.000Z",
        "messageId": email.provider_message_id,
        "destination": [email.to_email],
    }
    if kind == "Delivery":
        body = {"recipients": [email.to_email], "smtpResponse": "250 ok", "timestamp": "2026-11-22T05:59:39.000Z"}
    else:
        body = {"complainedRecipients": [{"emailAddress": email.to_email}], "complaintFeedbackType": "abuse"}
    return {"notificationType": kind, "mail": mail, kind.lower(): body}


def generic_post(
    client, events, *, secret: str = GENERIC_SECRET, timestamp: int | None = None, raw: bytes | None = None
):
    body = raw if raw is not None else json.dumps(events).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = hmac.new(secret.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return client.post(
        "/webhooks/generic",
        body,
        content_type="application/json",
        HTTP_X_HERALD_TIMESTAMP=stamp,
        HTTP_X_HERALD_SIGNATURE=f"v1={signature}",
    )


def basic_auth(credentials: str = BASIC_AUTH) -> dict:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(credentials.encode()).decode()}


MAILGUN_KEY = "key-mailgun-test-signing"


@pytest.fixture(name="feedback_settings")
def feedback_settings_fixture(settings):
    settings.FEEDBACK_SES_TOPIC_ARNS = [TOPIC_ARN]
    settings.FEEDBACK_GENERIC_SECRET = GENERIC_SECRET
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": [BASIC_AUTH], "MAILGUN_WEBHOOK_SIGNING_KEY": MAILGUN_KEY}
    return settings
