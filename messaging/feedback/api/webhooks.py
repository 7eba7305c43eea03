"""`POST /webhooks/<provider>`: Anymail's tracking webhook views, each behind its provider's authentication, and
`POST /webhooks/generic` for self-run MTAs.

Anymail parses and authenticates; these subclasses add what Herald promises on top: a provider without credentials
refuses everything (403), authentication failures are 403 and malformed bodies 400 (Anymail answers 400 for both),
every notification gets an event id for its receipt, and all events of one notification are processed in one
transaction, so an unexpected failure is a 500 that the provider retries and nothing half-written remains.
"""

import hashlib
import logging
from collections import Counter

from anymail.exceptions import AnymailAPIError, AnymailConfigurationError, AnymailWebhookValidationFailure
from anymail.signals import AnymailTrackingEvent, tracking
from anymail.utils import get_anymail_setting
from anymail.webhooks.amazon_ses import AmazonSESBaseWebhookView, AmazonSESTrackingWebhookView
from anymail.webhooks.brevo import BrevoTrackingWebhookView
from anymail.webhooks.mailgun import MailgunTrackingWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.resend import ResendTrackingWebhookView, SvixWebhookValidationMixin
from anymail.webhooks.sparkpost import SparkPostTrackingWebhookView
from django.conf import settings
from django.db import transaction
from django.dispatch import receiver
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.errors import ErrorCode
from core.http.exceptions import error_json_response
from messaging.feedback import generic, sns
from messaging.feedback.events import PROVIDERS, from_anymail
from messaging.feedback.services import feedback_record
from messaging.feedback.signatures import svix_signature_valid

logger = logging.getLogger(__name__)

# What a body that cannot be read raises inside Anymail's parsers (json errors are ValueErrors).
MALFORMED = (ValueError, KeyError, TypeError, AttributeError, IndexError, AnymailAPIError, AnymailConfigurationError)


def _forbidden(provider: str, reason) -> JsonResponse:
    logger.warning("Refused a %s webhook: %s", provider, reason)
    return error_json_response(403, ErrorCode.FORBIDDEN, "The webhook could not be authenticated")


def _malformed(provider: str, reason) -> JsonResponse:
    logger.warning("Malformed %s webhook: %s", provider, reason)
    return error_json_response(400, ErrorCode.INVALID_REQUEST_BODY, "The webhook body could not be read")


def _with_event_ids(events: list[AnymailTrackingEvent], body: bytes) -> list[AnymailTrackingEvent]:
    """Give every event a stable id for its receipt: the provider's, else a digest of the body (a redelivery sends
    the same bytes); events of one notification sharing an id (SES: one per recipient) are told apart by position."""
    digest = "sha256:" + hashlib.sha256(body).hexdigest()
    for event in events:
        event.event_id = str(event.event_id or digest)
    shared = Counter(event.event_id for event in events)
    for index, event in enumerate(events):
        if shared[event.event_id] > 1:
            event.event_id = f"{event.event_id}#{index}"
    return events


class FeedbackWebhookMixin:
    """Put first in the bases of an Anymail tracking view."""

    @classmethod
    def configured(cls) -> bool:
        """Whether the provider has credentials; without them its webhook would be open to anyone."""
        return bool(get_anymail_setting("webhook_secret", default=None))

    def challenge(self, request) -> HttpResponse | None:
        return None

    def post(self, request, *args, **kwargs):
        provider = PROVIDERS[self.esp_name]
        challenge = self.challenge(request)
        if challenge is not None:
            return challenge
        try:
            self.run_validators(request)
            events = _with_event_ids(self.parse_events(request), request.body)
        except AnymailWebhookValidationFailure as exc:
            return _forbidden(provider, exc)
        except MALFORMED as exc:
            return _malformed(provider, exc)
        with transaction.atomic():
            for event in events:
                self.signal.send(sender=self.__class__, event=event, esp_name=self.esp_name)
        return HttpResponse()


@receiver(tracking, dispatch_uid="messaging.feedback")
def _tracking_received(sender, event: AnymailTrackingEvent, esp_name: str, **kwargs) -> None:
    feedback_record(event=from_anymail(esp_name=esp_name, event=event))


class SesWebhookView(FeedbackWebhookMixin, AmazonSESTrackingWebhookView):
    # The SNS signature and the topic allow-list authenticate; basic auth is optional on top.
    warn_if_no_basic_auth = False

    def __init__(self, **kwargs):
        # Anymail's SES base sets up boto3 only to confirm subscriptions, which is one https GET of the
        # SubscribeURL (done by sns.sns_subscription_confirm); boto3 is not a dependency.
        self.auto_confirm_enabled = True
        super(AmazonSESBaseWebhookView, self).__init__(**kwargs)

    @classmethod
    def configured(cls) -> bool:
        return bool(settings.FEEDBACK_SES_TOPIC_ARNS)

    def challenge(self, request):
        # As Anymail's SES view: SNS sends basic auth only after a 401 asking for it.
        if self.basic_auth and not request.META.get("HTTP_AUTHORIZATION"):
            response = HttpResponse(status=401)
            response["WWW-Authenticate"] = 'Basic realm="Herald webhooks"'
            return response
        return None

    def validate_request(self, request):
        sns.sns_message_check(self._parse_sns_message(request))

    def auto_confirm_sns_subscription(self, sns_message):
        sns.sns_subscription_confirm(sns_message)


class PostmarkWebhookView(FeedbackWebhookMixin, PostmarkTrackingWebhookView):
    pass


class BrevoWebhookView(FeedbackWebhookMixin, BrevoTrackingWebhookView):
    pass


class SparkPostWebhookView(FeedbackWebhookMixin, SparkPostTrackingWebhookView):
    pass


class MailgunWebhookView(FeedbackWebhookMixin, MailgunTrackingWebhookView):
    @classmethod
    def configured(cls) -> bool:
        return bool(
            get_anymail_setting("webhook_signing_key", esp_name="Mailgun", default=None)
            or get_anymail_setting("api_key", esp_name="Mailgun", allow_bare=True, default=None)
        )


class ResendWebhookView(FeedbackWebhookMixin, ResendTrackingWebhookView):
    def __init__(self, **kwargs):
        # Anymail checks Svix signatures with the svix package; the same scheme is checked in validate_request
        # below, so Anymail's own check stays off.
        self.signing_secret = self._svix_webhook = None
        self.warn_if_no_basic_auth = not settings.FEEDBACK_RESEND_SIGNING_SECRET
        super(SvixWebhookValidationMixin, self).__init__(**kwargs)

    @classmethod
    def configured(cls) -> bool:
        return bool(settings.FEEDBACK_RESEND_SIGNING_SECRET) or super().configured()

    def validate_request(self, request):
        secret = settings.FEEDBACK_RESEND_SIGNING_SECRET
        if secret and not svix_signature_valid(
            secret=secret, headers=request.headers, body=request.body, tolerance=settings.FEEDBACK_SIGNATURE_TOLERANCE
        ):
            raise AnymailWebhookValidationFailure("Resend webhook signature does not verify")


PROVIDER_VIEWS = {
    "ses": SesWebhookView,
    "postmark": PostmarkWebhookView,
    "mailgun": MailgunWebhookView,
    "brevo": BrevoWebhookView,
    "sparkpost": SparkPostWebhookView,
    "resend": ResendWebhookView,
}


@csrf_exempt
def provider_webhook(request, provider: str):
    view_class = PROVIDER_VIEWS.get(provider)
    if view_class is None:
        return error_json_response(404, ErrorCode.RESOURCE_NOT_FOUND, f"No webhook for provider {provider!r}")
    if not view_class.configured():
        return _forbidden(provider, "no credentials are configured for it")
    return view_class.as_view()(request)


@csrf_exempt
@require_POST
def generic_webhook(request):
    """The signed JSON webhook for self-run MTAs (docs/feedback.md)."""
    if not generic.signature_valid(request):
        return _forbidden("generic", "missing, stale or wrong signature")
    try:
        events = generic.parse(request.body)
    except generic.Malformed as exc:
        return error_json_response(400, ErrorCode.INVALID_REQUEST_BODY, str(exc))
    with transaction.atomic():
        receipts = [feedback_record(event=event) for event in events]
    return JsonResponse({"received": len(events), "duplicates": receipts.count(None)})
