"""`POST /v1/track` in front of Django (config.api.fastroute): the view's serializer, service and answer."""

from accounts.keys import KeyKind
from config.api.fastroute import FastRoute
from contacts.api.serializers import TrackInputSerializer
from contacts.api.views import track_response_data
from contacts.upsert import event_track


def _track(project, values: dict, payload: dict) -> dict:
    result = event_track(
        project=project,
        email=values["email"],
        name=values["event"],
        subscribed=values.get("subscribed"),
        data=values.get("data"),
    )
    return track_response_data(result)


TRACK_ROUTE = FastRoute(
    path="/v1/track",
    key_kind=KeyKind.PUBLIC,
    serializer=TrackInputSerializer(),
    handle=_track,
    # event_track needs no transaction around it, as for the view (`atomic_writes = False`).
    atomic=False,
    headers=(("Vary", "origin"),),
)
