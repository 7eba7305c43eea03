"""Provider webhooks over HTTP: the providers' documented sample payloads, signed with test credentials, and what
they do to emails, contacts, events, the suppression list and receipts."""

import base64
import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from contacts.models import Contact, Event
from messaging.feedback.services import receipts_purge
from messaging.feedback.tests.feedback import (  # noqa: F401 - fixtures
    CERT_URL,
    MAILGUN_KEY,
    TOPIC_ARN,
    aws_fixture,
    basic_auth,
    feedback_settings_fixture,
    generic_post,
    post_sns,
    sent_email,
    ses_bounce,
    ses_event,
    sns_timestamp,
)
from messaging.models import Email, Suppression, WebhookReceipt

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("feedback_settings")]


def email_events(email):
    return list(Event.objects.filter(email_id=email.id).order_by("created_at").values_list("name", "data"))


def contact_events(email):
    return list(Event.objects.filter(contact_id=email.contact_id, email_id=None).values_list("name", "data"))


# Amazon SES via SNS -------------------------------------------------------------------------------------------------


def test_ses_subscription_confirmation_fetches_the_subscribe_url(client, aws):
    subscribe_url = (
        f"https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn={TOPIC_ARN}&Token=2336412f37fb687f"
    )
    message = aws.sign(
        {
            "Type": "SubscriptionConfirmation",
            "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
            "Token": "2336412f37fb687f",
            "TopicArn": TOPIC_ARN,
            "Message": f"You have chosen to subscribe to the topic {TOPIC_ARN}.\nTo confirm the subscription, visit "
            "the SubscribeURL included in this message.",
            "SubscribeURL": subscribe_url,
            "Timestamp": sns_timestamp(),
            "SigningCertURL": CERT_URL,
        }
    )
    response = post_sns(client, message, **basic_auth())
    assert response.status_code == 200
    assert aws.fetched == [CERT_URL, subscribe_url]


def test_ses_subscription_to_a_foreign_confirm_url_is_refused(client, aws):
    message = aws.sign(
        {
            "Type": "SubscriptionConfirmation",
            "MessageId": "m-1",
            "Token": "t",
            "TopicArn": TOPIC_ARN,
            "Message": "confirm",
            "SubscribeURL": "https://sns.us-east-1.amazonaws.com.evil.test/?Action=ConfirmSubscription",
            "Timestamp": sns_timestamp(),
            "SigningCertURL": CERT_URL,
        }
    )
    assert post_sns(client, message, **basic_auth()).status_code == 403
    assert aws.fetched == [CERT_URL]


@pytest.mark.parametrize("version", ["1", "2"])
def test_ses_hard_bounce_bounces_unsubscribes_and_suppresses(client, aws, project, version):
    email = sent_email(project.project, provider_message_id="0100019367aa-bounce-000000")
    message = aws.notification(ses_bounce(email))
    message = aws.sign(
        {k: v for k, v in message.items() if k not in ("Signature", "SignatureVersion")}, version=version
    )

    response = post_sns(client, message, **basic_auth())

    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED
    assert email.bounced_at is not None
    [(name, data)] = email_events(email)
    assert name == "email.bounce"
    assert data["bounceType"] == "hard"
    assert data["emailId"] == str(email.id)
    assert data["bouncedAt"] == message["Timestamp"]  # Anymail: the time SNS published the notification
    contact = Contact.objects.get(id=email.contact_id)
    assert contact.subscribed is False
    assert contact_events(email) == [("contact.unsubscribed", {"source": "bounce"})]
    suppression = Suppression.objects.get(project=project.project, email=email.to_email)
    assert suppression.reason == Suppression.Reason.BOUNCE
    assert suppression.source_email_id == email.id
    assert "550 5.1.1" in suppression.detail
    receipt = WebhookReceipt.objects.get()
    assert (receipt.provider, receipt.event_id, receipt.outcome) == ("ses", message["MessageId"], "PROCESSED")


def test_ses_replay_changes_nothing(client, aws, project):
    email = sent_email(project.project, provider_message_id="0100019367aa-replay-000000")
    message = aws.notification(ses_bounce(email))
    assert post_sns(client, message, **basic_auth()).status_code == 200
    assert post_sns(client, message, **basic_auth()).status_code == 200
    assert WebhookReceipt.objects.count() == 1
    assert len(email_events(email)) == 1
    assert len(contact_events(email)) == 1
    assert aws.fetched == [CERT_URL], "the signing certificate is fetched once and cached"


def test_ses_soft_bounce_is_recorded_without_suppression(client, aws, project):
    email = sent_email(project.project, provider_message_id="0100019367aa-soft-000000")
    assert (
        post_sns(client, aws.notification(ses_bounce(email, bounce_type="Transient")), **basic_auth()).status_code
        == 200
    )
    email.refresh_from_db()
    assert email.status == Email.Status.SENT
    assert [(name, data["bounceType"]) for name, data in email_events(email)] == [("email.bounce", "soft")]
    assert not Suppression.objects.exists()
    assert Contact.objects.get(id=email.contact_id).subscribed is True


def test_ses_delivery_then_complaint(client, aws, project):
    email = sent_email(project.project, provider_message_id="0100019367aa-complaint-000000")
    assert post_sns(client, aws.notification(ses_event(email, "Delivery")), **basic_auth()).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.DELIVERED
    assert email.delivered_at is not None
    assert post_sns(client, aws.notification(ses_event(email, "Complaint")), **basic_auth()).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.COMPLAINED
    assert email.complained_at is not None
    assert [name for name, _ in email_events(email)] == ["email.delivery", "email.complaint"]
    assert set(email_events(email)[0][1]) >= {"deliveredAt", "messageId", "subject", "from", "source"}
    assert Suppression.objects.get(email=email.to_email).reason == Suppression.Reason.COMPLAINT
    assert contact_events(email) == [("contact.unsubscribed", {"source": "complaint"})]


def test_ses_notification_without_basic_auth_is_challenged(client, aws, project):
    email = sent_email(project.project, provider_message_id="x-1")
    response = post_sns(client, aws.notification(ses_bounce(email)))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Basic")
    assert not WebhookReceipt.objects.exists()


def forged(aws, message):
    return {**message, "Message": message["Message"].replace("Permanent", "Permanent ")}


def other_topic(aws, message):
    return aws.notification(json.loads(message["Message"]), topic_arn="arn:aws:sns:us-east-1:123456789012:someone-else")


def foreign_certificate(aws, message):
    message = {**message, "SigningCertURL": "https://evil.test/SimpleNotificationService-1.pem"}
    return aws.sign({k: v for k, v in message.items() if k != "Signature"})


def other_region_certificate(aws, message):
    url = CERT_URL.replace("us-east-1", "eu-west-1")
    return aws.sign({**{k: v for k, v in message.items() if k != "Signature"}, "SigningCertURL": url})


def unsigned(aws, message):
    return {k: v for k, v in message.items() if k != "Signature"}


@pytest.mark.parametrize("tamper", [forged, other_topic, foreign_certificate, other_region_certificate, unsigned])
def test_ses_forged_or_foreign_notifications_are_refused_and_record_nothing(client, aws, project, tamper):
    email = sent_email(project.project, provider_message_id="0100019367aa-forged-000000")
    message = tamper(aws, aws.notification(ses_bounce(email)))
    response = post_sns(client, message, **basic_auth())
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert not WebhookReceipt.objects.exists()
    assert not Event.objects.exists()
    email.refresh_from_db()
    assert email.status == Email.Status.SENT
    assert all(url == CERT_URL for url in aws.fetched), "no request to any host but SNS"


@pytest.mark.parametrize(
    ("age", "timestamp", "status"),
    [
        (timedelta(minutes=59), None, 200),  # SNS retries a delivery for an hour at most
        (timedelta(minutes=61), None, 403),
        (timedelta(days=8), None, 403),  # its receipt purged (FEEDBACK_RECEIPT_RETENTION_DAYS): a replay
        (timedelta(0), "yesterday", 403),
        (timedelta(0), "", 403),
    ],
)
def test_ses_notifications_older_than_an_hour_are_refused_and_record_nothing(
    client, aws, project, age, timestamp, status
):
    email = sent_email(project.project, provider_message_id="0100019367aa-old-000000")
    message = aws.notification(ses_bounce(email), published=timezone.now() - age)
    if timestamp is not None:
        message = aws.sign({**unsigned(aws, message), "Timestamp": timestamp})  # signed as SNS would, yet refused
    response = post_sns(client, message, **basic_auth())
    assert response.status_code == status
    if status == 403:
        error = response.json()["error"]  # as for a bad signature
        assert (error["code"], error["message"]) == ("FORBIDDEN", "The webhook could not be authenticated")
        assert not WebhookReceipt.objects.exists() and not Event.objects.exists()
        email.refresh_from_db()
        assert email.status == Email.Status.SENT


def test_ses_is_refused_while_no_topic_is_allowed(client, aws, project, settings):
    settings.FEEDBACK_SES_TOPIC_ARNS = []
    email = sent_email(project.project, provider_message_id="x-2")
    assert post_sns(client, aws.notification(ses_bounce(email)), **basic_auth()).status_code == 403
    assert aws.fetched == []


def test_ses_malformed_body_is_400(client):
    response = client.post(
        "/webhooks/ses",
        "{not json",
        content_type="text/plain",
        HTTP_X_AMZ_SNS_MESSAGE_TYPE="Notification",
        **basic_auth(),
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST_BODY"


# Postmark ---------------------------------------------------------------------------------------------------------


def postmark_bounce(email, bounce_type="HardBounce", record_id=4323372036854775807):
    """Postmark's documented bounce webhook example, for this email."""
    return {
        "RecordType": "Bounce",
        "MessageStream": "outbound",
        "ID": record_id,
        "Type": bounce_type,
        "TypeCode": 1,
        "Name": "Hard bounce",
        "Tag": "Test",
        "MessageID": email.provider_message_id,
        "Metadata": {"a_key": "a_value"},
        "ServerID": 23,
        "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
        "Details": "Test bounce details",
        "Email": email.to_email,
        "From": email.from_email,
        "BouncedAt": "2026-11-22T05:33:54.9070259Z",
        "DumpAvailable": True,
        "Inactive": True,
        "CanActivate": True,
        "Subject": email.subject,
    }


def post_json(client, path, payload, **headers):
    return client.post(path, json.dumps(payload), content_type="application/json", **headers)


def test_postmark_hard_bounce(client, project):
    email = sent_email(project.project, provider_message_id="883953f4-6105-42a2-a16a-77a8eac79483")
    response = post_json(client, "/webhooks/postmark", postmark_bounce(email), **basic_auth())
    assert response.status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED
    assert Suppression.objects.filter(project=project.project, email=email.to_email).exists()
    assert WebhookReceipt.objects.get().event_id == "4323372036854775807"


def test_postmark_soft_bounce_is_not_suppressed(client, project):
    email = sent_email(project.project, provider_message_id="883953f4-soft")
    assert (
        post_json(client, "/webhooks/postmark", postmark_bounce(email, "SoftBounce"), **basic_auth()).status_code == 200
    )
    email.refresh_from_db()
    assert email.status == Email.Status.SENT
    assert [data["bounceType"] for _, data in email_events(email)] == ["soft"]
    assert not Suppression.objects.exists()


def test_postmark_delivery_replayed_without_an_id_counts_once(client, project):
    email = sent_email(project.project, provider_message_id="883953f4-delivery")
    # Postmark's documented delivery webhook example: no ID, so the receipt is keyed by the body.
    delivery = {
        "MessageID": email.provider_message_id,
        "Recipient": email.to_email,
        "DeliveredAt": "2026-11-22T05:33:54.9070259Z",
        "Details": "Test delivery webhook details",
        "Tag": "welcome-email",
        "ServerID": 23,
        "Metadata": {},
        "RecordType": "Delivery",
        "MessageStream": "outbound",
    }
    for _ in range(2):
        assert post_json(client, "/webhooks/postmark", delivery, **basic_auth()).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.DELIVERED
    assert [name for name, _ in email_events(email)] == ["email.delivery"]
    assert WebhookReceipt.objects.get().event_id.startswith("sha256:")


@pytest.mark.parametrize("auth", [{}, basic_auth("herald:wrong"), basic_auth("someone:webhook-password")])
def test_postmark_without_the_right_basic_auth_is_refused(client, project, auth):
    email = sent_email(project.project, provider_message_id="883953f4-auth")
    assert post_json(client, "/webhooks/postmark", postmark_bounce(email), **auth).status_code == 403
    assert not WebhookReceipt.objects.exists()
    email.refresh_from_db()
    assert email.status == Email.Status.SENT


def test_a_provider_without_credentials_refuses_everything(client, project, settings):
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}
    email = sent_email(project.project, provider_message_id="883953f4-open")
    assert post_json(client, "/webhooks/postmark", postmark_bounce(email)).status_code == 403
    assert not WebhookReceipt.objects.exists()


def test_postmark_malformed_body_is_400(client):
    response = client.post("/webhooks/postmark", "[1, 2", content_type="application/json", **basic_auth())
    assert response.status_code == 400
    assert not WebhookReceipt.objects.exists()


def test_unknown_provider_is_404(client):
    assert client.post("/webhooks/nosuchmail", "{}", content_type="application/json").status_code == 404


# Mailgun ----------------------------------------------------------------------------------------------------------


def mailgun_failed(email, severity="permanent", token="a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"):
    """Mailgun's documented `failed` webhook example, for this email, signed with the test signing key."""
    timestamp = str(int(time.time()))
    signature = hmac.new(MAILGUN_KEY.encode(), f"{timestamp}{token}".encode(), hashlib.sha256).hexdigest()
    return {
        "signature": {"timestamp": timestamp, "token": token, "signature": signature},
        "event-data": {
            "event": "failed",
            "id": "G9Bn5sl1TC6nu79C8C0bwg",
            "timestamp": 1763791195.375624,
            "log-level": "error",
            "severity": severity,
            "reason": "bounce",
            "recipient": email.to_email,
            "message": {
                "headers": {
                    "to": f"Ann <{email.to_email}>",
                    "message-id": email.provider_message_id.strip("<>"),
                    "from": f"Alice <{email.from_email}>",
                    "subject": email.subject,
                },
                "attachments": [],
                "size": 111,
            },
            "delivery-status": {
                "attempt-no": 1,
                "message": "550 5.1.1 The email account that you tried to reach does not exist",
                "code": 550,
                "description": "",
                "session-seconds": 0.4,
            },
            "flags": {"is-routed": False, "is-authenticated": True, "is-system-test": False, "is-test-mode": False},
            "tags": ["my_tag_1"],
            "user-variables": {},
        },
    }


def test_mailgun_permanent_failure_bounces(client, project):
    email = sent_email(project.project, provider_message_id="<20261122055955.1.ABC@mg.alice.test>")
    assert post_json(client, "/webhooks/mailgun", mailgun_failed(email), **basic_auth()).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED
    assert "550 5.1.1" in email.last_error
    assert Suppression.objects.filter(email=email.to_email).exists()


def test_mailgun_temporary_failure_is_a_soft_bounce(client, project):
    email = sent_email(project.project, provider_message_id="<20261122055955.2.ABC@mg.alice.test>")
    assert (
        post_json(client, "/webhooks/mailgun", mailgun_failed(email, severity="temporary"), **basic_auth()).status_code
        == 200
    )
    assert [data["bounceType"] for _, data in email_events(email)] == ["soft"]
    assert not Suppression.objects.exists()


def test_mailgun_forged_signature_is_refused(client, project):
    email = sent_email(project.project, provider_message_id="<20261122055955.3.ABC@mg.alice.test>")
    payload = mailgun_failed(email)
    payload["signature"]["signature"] = "0" * 64
    assert post_json(client, "/webhooks/mailgun", payload, **basic_auth()).status_code == 403
    assert not WebhookReceipt.objects.exists()
    email.refresh_from_db()
    assert email.status == Email.Status.SENT


def test_mailgun_replay_of_a_token_is_a_no_op(client, project):
    email = sent_email(project.project, provider_message_id="<20261122055955.4.ABC@mg.alice.test>")
    payload = mailgun_failed(email)
    assert post_json(client, "/webhooks/mailgun", payload, **basic_auth()).status_code == 200
    assert post_json(client, "/webhooks/mailgun", payload, **basic_auth()).status_code == 200
    assert len(email_events(email)) == 1


# Generic -----------------------------------------------------------------------------------------------------------


def test_generic_events_by_message_id_and_email_id(client, project):
    email = sent_email(project.project)
    events = [
        {"id": "evt-1", "type": "delivered", "messageId": email.message_id, "timestamp": "2026-11-22T06:00:00Z"},
        {"id": "evt-2", "type": "opened", "emailId": str(email.id)},
        {"id": "evt-3", "type": "clicked", "emailId": str(email.id), "link": "https://alice.test/offer"},
        {"id": "evt-4", "type": "bounced", "emailId": str(email.id), "bounceType": "soft", "reason": "mailbox full"},
    ]
    response = generic_post(client, events)
    assert response.status_code == 200
    assert response.json() == {"received": 4, "duplicates": 0}
    email.refresh_from_db()
    assert (email.status, email.opens, email.clicks) == (Email.Status.CLICKED, 1, 1)
    assert email.delivered_at.isoformat().startswith("2026-11-22T06:00:00")
    names = [name for name, _ in email_events(email)]
    assert names == ["email.delivery", "email.open", "email.click", "email.bounce"]
    click = email_events(email)[2][1]
    assert (click["link"], click["isFirstClick"], click["clicks"]) == ("https://alice.test/offer", True, 1)

    # The same batch again: every event is a duplicate, nothing moves.
    assert generic_post(client, events).json() == {"received": 4, "duplicates": 4}
    email.refresh_from_db()
    assert (email.opens, email.clicks) == (1, 1)
    assert len(email_events(email)) == 4


def test_a_late_delivery_never_moves_an_email_back(client, project):
    email = sent_email(project.project, status=Email.Status.OPENED, opened_at=timezone.now(), opens=1)
    assert generic_post(client, [{"id": "d-1", "type": "delivered", "emailId": str(email.id)}]).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.OPENED
    assert email.delivered_at is not None


def test_unknown_message_is_200_and_recorded_as_ignored(client, project):
    response = generic_post(client, [{"id": "u-1", "type": "bounced", "bounceType": "hard", "messageId": "<nope@x>"}])
    assert response.status_code == 200
    receipt = WebhookReceipt.objects.get()
    assert (receipt.outcome, receipt.detail, receipt.project_id) == ("IGNORED", "unknown message", None)


def test_a_recipient_other_than_the_emails_is_ignored(client, project):
    email = sent_email(project.project)
    event = {"id": "r-1", "type": "bounced", "bounceType": "hard", "emailId": str(email.id), "recipient": "x@y.test"}
    assert generic_post(client, [event]).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.SENT
    assert WebhookReceipt.objects.get().outcome == "IGNORED"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"secret": "wrong-secret"},
        {"timestamp": int(time.time()) - 3600},
        {"timestamp": int(time.time()) + 3600},
    ],
)
def test_generic_bad_or_stale_signature_is_403(client, project, kwargs):
    email = sent_email(project.project)
    event = {"id": "s-1", "type": "bounced", "bounceType": "hard", "emailId": str(email.id)}
    assert generic_post(client, [event], **kwargs).status_code == 403
    assert not WebhookReceipt.objects.exists()


def test_generic_unsigned_is_403(client):
    assert client.post("/webhooks/generic", "[]", content_type="application/json").status_code == 403


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"{}",
        b"[]",
        b'[{"type": "delivered", "emailId": "x"}]',
        b'[{"id": "1", "type": "sent", "emailId": "x"}]',
        b'[{"id": "1", "type": "delivered"}]',
        b'[{"id": "1", "type": "bounced", "emailId": "x"}]',
        b'[{"id": "1", "type": "delivered", "emailId": "x", "timestamp": "yesterday"}]',
        b'[{"id": 5, "type": "delivered", "emailId": "x"}]',
        b'["x"]',
        # Found by the schema fuzz test: a type that is not a string was a 500.
        b'[{"id": "1", "type": {"a": 1}, "emailId": "x"}]',
        b'[{"id": "1", "type": ["delivered"], "emailId": "x"}]',
        # Found by the schema fuzz test on PostgreSQL, which stores no NUL character in text: a 500.
        b'[{"id": "\\u0000", "type": "opened", "emailId": "x"}]',
        b'[{"id": "1", "type": "opened", "emailId": "x", "reason": "\\ud800"}]',
    ],
)
def test_generic_malformed_bodies_are_400(client, body):
    response = generic_post(client, None, raw=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST_BODY"
    assert not WebhookReceipt.objects.exists()


def test_generic_is_refused_without_a_configured_secret(client, settings):
    settings.FEEDBACK_GENERIC_SECRET = ""
    assert generic_post(client, [{"id": "1", "type": "delivered", "emailId": "x"}], secret="").status_code == 403


# Isolation, transactions, retention ---------------------------------------------------------------------------------


def test_a_bounce_for_one_projects_email_never_touches_another(client, project, other_project):
    mine = sent_email(project.project, "shared@example.test")
    theirs = sent_email(other_project.project, "shared@example.test")
    event = {"id": "iso-1", "type": "complained", "emailId": str(mine.id)}
    assert generic_post(client, [event]).status_code == 200
    theirs.refresh_from_db()
    assert theirs.status == Email.Status.SENT
    assert Contact.objects.get(id=theirs.contact_id).subscribed is True
    assert not Suppression.objects.filter(project=other_project.project).exists()
    assert Suppression.objects.filter(project=project.project).count() == 1
    assert not Event.objects.filter(project=other_project.project).exists()


def test_an_unexpected_failure_is_a_500_and_leaves_nothing_half_written(client, project):
    email = sent_email(project.project)
    client.raise_request_exception = False
    events = [
        {"id": "t-1", "type": "delivered", "emailId": str(email.id)},
        {"id": "t-2", "type": "bounced", "bounceType": "hard", "emailId": str(email.id)},
    ]
    # A real database failure half-way: the suppression table is gone when the bounce reaches it, after the
    # delivery, the status change and the events were written.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE messaging_suppression RENAME TO messaging_suppression_away")
    try:
        assert generic_post(client, events).status_code == 500
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE messaging_suppression_away RENAME TO messaging_suppression")
    email.refresh_from_db()
    assert (email.status, email.delivered_at, email.bounced_at) == (Email.Status.SENT, None, None)
    assert not WebhookReceipt.objects.exists()
    assert not Event.objects.exists()
    assert Contact.objects.get(id=email.contact_id).subscribed is True

    # The provider retries once we are healthy again: processed in full.
    assert generic_post(client, events).status_code == 200
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED


def test_receipts_older_than_the_retention_are_purged(client, project):
    email = sent_email(project.project)
    generic_post(client, [{"id": "old", "type": "delivered", "emailId": str(email.id)}])
    generic_post(client, [{"id": "new", "type": "opened", "emailId": str(email.id)}])
    WebhookReceipt.objects.filter(event_id="old").update(received_at=timezone.now() - timedelta(days=8))
    assert receipts_purge() == 1
    assert list(WebhookReceipt.objects.values_list("event_id", flat=True)) == ["new"]


def test_lookup_by_provider_message_id_is_one_query(project):
    from messaging.feedback.events import FeedbackEvent
    from messaging.feedback.services import email_for_feedback

    email = sent_email(project.project, provider_message_id="<abc@mg.alice.test>")
    event = FeedbackEvent(
        provider="mailgun", event_id="e", event_type="bounced", kind="bounced", message_id="abc@mg.alice.test"
    )
    with CaptureQueriesContext(connection) as queries:
        assert email_for_feedback(event=event) == email
    assert len(queries) == 1


# Brevo, SparkPost, Resend --------------------------------------------------------------------------------------


def brevo_bounce(email, event="hard_bounce"):
    """Brevo's documented transactional webhook example."""
    return {
        "event": event,
        "email": email.to_email,
        "id": 123456,
        "date": "2026-11-22 05:00:00",
        "ts": 1763787619,
        "message-id": email.provider_message_id,
        "ts_event": 1763787654,
        "subject": email.subject,
        "tag": '["transactionalTag"]',
        "sending_ip": "203.0.113.5",
        "ts_epoch": 1763787654000,
        "reason": "550 unknown user",
        "tags": ["transac_messages"],
    }


def sparkpost_bounce(email, bounce_class="10"):
    """SparkPost's documented bounce event, in the batch array its webhooks post."""
    return [
        {
            "msys": {
                "message_event": {
                    "type": "bounce",
                    "bounce_class": bounce_class,
                    "campaign_id": "Example Campaign Name",
                    "customer_id": "1",
                    "delv_method": "esmtp",
                    "error_code": "550",
                    "event_id": f"92356927693813856{bounce_class}",
                    "friendly_from": email.from_email,
                    "ip_address": "127.0.0.1",
                    "message_id": "000443ee14578172be22",
                    "msg_from": email.from_email,
                    "num_retries": "0",
                    "rcpt_meta": {},
                    "rcpt_tags": [],
                    "rcpt_to": email.to_email,
                    "raw_rcpt_to": email.to_email,
                    "raw_reason": "550 5.1.1 user unknown",
                    "reason": "550 5.1.1 user unknown",
                    "routing_domain": "example.test",
                    "subject": email.subject,
                    "timestamp": "1763787654",
                    "transmission_id": email.provider_message_id,
                }
            }
        },
        {"msys": {}},  # SparkPost's "ping" entry
    ]


@pytest.mark.parametrize(
    ("path", "payload", "bounce_type"),
    [
        ("/webhooks/brevo", brevo_bounce, "hard"),
        ("/webhooks/brevo", lambda email: brevo_bounce(email, "soft_bounce"), "soft"),
        ("/webhooks/sparkpost", sparkpost_bounce, "hard"),
        ("/webhooks/sparkpost", lambda email: sparkpost_bounce(email, "22"), "soft"),
    ],
)
def test_brevo_and_sparkpost_bounces(client, project, path, payload, bounce_type):
    email = sent_email(project.project, provider_message_id="<202611220500.5787683@relay.example.test>")
    assert post_json(client, path, payload(email)).status_code == 403, "basic auth is required"
    assert post_json(client, path, payload(email), **basic_auth()).status_code == 200
    email.refresh_from_db()
    assert [data["bounceType"] for _, data in email_events(email)] == [bounce_type]
    assert email.status == (Email.Status.BOUNCED if bounce_type == "hard" else Email.Status.SENT)
    assert Suppression.objects.exists() is (bounce_type == "hard")


RESEND_SECRET = "whsec_" + base64.b64encode(b"resend-test-signing-secret-32by").decode()


def resend_post(client, payload, *, secret=RESEND_SECRET, svix_id="msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", age=0):
    body = json.dumps(payload).encode()
    timestamp = str(int(time.time()) - age)
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signature = base64.b64encode(hmac.new(key, f"{svix_id}.{timestamp}.".encode() + body, hashlib.sha256).digest())
    return client.post(
        "/webhooks/resend",
        body,
        content_type="application/json",
        HTTP_SVIX_ID=svix_id,
        HTTP_SVIX_TIMESTAMP=timestamp,
        HTTP_SVIX_SIGNATURE=f"v1,{signature.decode()}",
    )


def resend_bounce(email):
    """Resend's documented `email.bounced` example."""
    return {
        "type": "email.bounced",
        "created_at": "2026-11-22T05:41:12.126Z",
        "data": {
            "created_at": "2026-11-22T05:41:11.894719+00:00",
            "email_id": email.provider_message_id,
            "from": f"Alice <{email.from_email}>",
            "to": [email.to_email],
            "subject": email.subject,
            "bounce": {
                "message": "The recipient's email provider sent a hard bounce message.",
                "subType": "General",
                "type": "Permanent",
            },
        },
    }


def test_resend_svix_signed_bounce(client, project, settings):
    settings.FEEDBACK_RESEND_SIGNING_SECRET = RESEND_SECRET
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}
    email = sent_email(project.project, provider_message_id="56761188-7520-42d8-8898-ff6fc54ce618")
    assert (
        resend_post(client, resend_bounce(email), secret="whsec_" + base64.b64encode(b"x" * 24).decode()).status_code
        == 403
    )
    assert resend_post(client, resend_bounce(email), age=3600).status_code == 403
    assert not WebhookReceipt.objects.exists()
    assert resend_post(client, resend_bounce(email)).status_code == 200
    assert resend_post(client, resend_bounce(email)).status_code == 200  # a redelivery: same svix-id
    email.refresh_from_db()
    assert email.status == Email.Status.BOUNCED
    assert WebhookReceipt.objects.get().event_id == "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
