"""Templates and POST /v1/send: parse, call one service or selector, serialize."""

from datetime import UTC, datetime

from drf_spectacular.utils import extend_schema

from accounts.http.views import HandlerView
from core.http.output import output
from core.http.schema import ERROR_RESPONSE, IDEMPOTENCY_KEY
from messaging.sending.api import serializers as s
from messaging.sending.requests import emails_send_request

_send_output = output(s.SendResultSerializer)


def send_handle(project, values: dict, payload: dict) -> dict:
    """POST /v1/send once the body is valid: queue the emails, answer the Send result."""
    queued = emails_send_request(project=project, body=values, raw=payload)
    return _send_output({"success": True, "data": {"emails": queued, "timestamp": datetime.now(UTC)}})


class SendView(HandlerView):
    # A successful call is answered in front of Django (accounts.http.fastroute) with this view's serializer and
    # handler. `emails_send_request` is atomic on its own, and a single recipient's send is one write without a
    # transaction around it: no transaction here either.
    idempotent = True
    atomic_writes = False
    input_serializer = s.SendInputSerializer
    handler = staticmethod(send_handle)

    @extend_schema(
        summary="Send an email to one or more recipients",
        request=s.SendInputSerializer,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.SendResultSerializer, 404: ERROR_RESPONSE},
    )
    def post(self, request):
        return self.handled(request)
