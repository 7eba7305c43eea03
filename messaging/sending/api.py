"""Templates and POST /v1/send: parse, call one service or selector, serialize."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from config.api.schema import ERROR_RESPONSE, IDEMPOTENCY_KEY
from config.api.validation import validate
from config.api.views import ApiView
from core.time import iso_now
from messaging.sending import serializers as s
from messaging.sending.services import emails_send_request


class SendView(ApiView):
    idempotent = True

    @extend_schema(
        summary="Send an email to one or more recipients",
        request=s.SendInputSerializer,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.SendResultSerializer, 404: ERROR_RESPONSE},
    )
    def post(self, request):
        body = validate(s.SendInputSerializer, request.data)
        return Response(
            send_response_data(emails_send_request(project=request.auth.project, body=body, raw=request.data))
        )


def send_response_data(queued: list) -> dict:
    """The Send result envelope (also answered by `messaging.sending.fast`, the same request in front of Django)."""
    emails = [
        {"contact": {"id": str(item.contact.id), "email": item.contact.email}, "email": str(item.email.id)}
        for item in queued
    ]
    return {"success": True, "data": {"emails": emails, "timestamp": iso_now()}}
