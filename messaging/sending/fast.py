"""`POST /v1/send` in front of Django (config.api.fastroute): the view's serializer, service and answer."""

from accounts.keys import KeyKind
from config.api.fastroute import FastRoute
from messaging.sending.api import send_response_data
from messaging.sending.serializers import SendInputSerializer
from messaging.sending.services import emails_send_request


def _send(project, values: dict, payload: dict) -> dict:
    return send_response_data(emails_send_request(project=project, body=values, raw=payload))


# The service is atomic on its own, and a single recipient's send is one write without a transaction around it.
SEND_ROUTE = FastRoute(
    path="/v1/send", key_kind=KeyKind.SECRET, serializer=SendInputSerializer(), handle=_send, atomic=False
)
