"""The fast route in front of Django (accounts.http.fastroute) is its view taken apart at start-up, so the two cannot
answer differently: a view whose validation the route would skip is refused when the route is built; what Django's
middleware decides (the allowed hosts, the https redirect, the security headers, any header a middleware adds) holds
for answers of the route as for the view's; and what the view reads beyond key and body sends a request to it."""

import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from types import MappingProxyType, SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser

from accounts.http.authentication import PublicKeyAuthentication
from accounts.http.fastroute import FastRoute
from accounts.http.permissions import HasProject
from accounts.http.views import HandlerView
from config.tests.wsgi import assert_answered_alike, wsgi_call
from conftest import client_with
from contacts.models import Event
from core.http.output import output
from core.http.validation import validated_fields
from messaging.models import Email

pytestmark = pytest.mark.django_db

TRACK = {"email": "ann@example.test", "event": "signup"}
SEND = {"to": "ann@example.test", "from": "hello@alice.test", "subject": "Hi", "body": "<p>Hi</p>"}


def route_of(serializer_class, **view_attributes) -> FastRoute:
    attributes = {
        "authentication_classes": [PublicKeyAuthentication],
        "input_serializer": serializer_class,
        "handler": staticmethod(lambda project, values, payload: {}),
        "post": lambda self, request: self.handled(request),
        **view_attributes,
    }
    return FastRoute.of_view("/probe", type("ProbeView", (HandlerView,), attributes))


class Plain(serializers.Serializer):
    name = serializers.CharField(max_length=10)


class ObjectHook(Plain):
    def validate(self, attrs):
        return attrs


class FieldHook(Plain):
    def validate_name(self, value):
        return value


class SerializerValidators(Plain):
    class Meta:
        validators = [lambda attrs: None]


class ConvertsItself(Plain):
    def to_internal_value(self, data):
        return super().to_internal_value(data)


class RenamedField(Plain):
    label = serializers.CharField(source="title")


@pytest.mark.parametrize(
    ("serializer_class", "named"),
    [
        (ObjectHook, "ObjectHook.validate()"),
        (FieldHook, "FieldHook.validate_name()"),
        (SerializerValidators, "SerializerValidators validators"),
        (ConvertsItself, "ConvertsItself.to_internal_value()"),
        (RenamedField, "RenamedField.label is written as 'title'"),
    ],
)
def test_a_serializer_whose_hooks_the_route_would_skip_is_refused_at_start_up(serializer_class, named):
    with pytest.raises(ImproperlyConfigured, match=named.replace("(", r"\(").replace(")", r"\)")):
        route_of(serializer_class)


def test_field_validators_run_field_by_field_and_are_accepted():
    def no_digits(value):
        if any(char.isdigit() for char in value):
            raise serializers.ValidationError("No digits")

    class WithFieldValidator(serializers.Serializer):
        name = serializers.CharField(validators=[no_digits])

    route = route_of(WithFieldValidator)
    assert validated_fields(route.serializer, {"name": "ann"}) == {"name": "ann"}
    assert validated_fields(route.serializer, {"name": "ann2"}) is None


def test_absent_fields_are_validated_as_drf_validates_them():
    class Shapes(serializers.Serializer):
        needed = serializers.CharField()
        optional = serializers.CharField(required=False)
        defaulted = serializers.IntegerField(required=False, default=7)
        nullable = serializers.BooleanField(required=False, allow_null=True)

    route = route_of(Shapes)
    for data in ({"needed": "a"}, {"needed": "a", "optional": "b", "nullable": None}, {"optional": "b"}, {}):
        drf = Shapes(data=data)
        expected = dict(drf.validated_data) if drf.is_valid() else None
        assert validated_fields(route.serializer, data) == expected


@pytest.mark.parametrize(
    "view_attributes",
    [
        {"permission_classes": [HasProject, IsAdminUser]},
        {"authentication_classes": []},
        {"throttle_classes": [object]},
        {"http_method_names": ["get", "options"]},
    ],
)
def test_a_view_whose_other_steps_the_route_would_skip_is_refused_at_start_up(view_attributes):
    with pytest.raises(ImproperlyConfigured, match="ProbeView"):
        route_of(Plain, **view_attributes)


def test_only_a_handler_view_has_a_route():
    with pytest.raises(ImproperlyConfigured, match="is not a HandlerView"):
        FastRoute.at("/contacts")
    assert FastRoute.at("/v1/track").view.input_serializer.__name__ == "TrackInputSerializer"


def test_the_answers_built_from_output_serializers_are_drfs_own(project):
    from contacts.api.serializers import TrackOutputSerializer
    from contacts.upsert import event_track
    from messaging.sending.api.serializers import SendResultSerializer

    tracked = {"success": True, "data": event_track(project=project.project, email="a@b.test", name="signup")}
    assert output(TrackOutputSerializer)(tracked) == TrackOutputSerializer(tracked).data
    queued = [
        SimpleNamespace(contact=SimpleNamespace(id=uuid.uuid4(), email=f"{n}@b.test"), email=SimpleNamespace(id=n))
        for n in (uuid.uuid4(), uuid.uuid4())
    ]
    sent = {"success": True, "data": {"emails": queued, "timestamp": datetime.now(UTC)}}
    assert output(SendResultSerializer)(sent) == SendResultSerializer(sent).data
    assert list(output(SendResultSerializer)(sent)["data"]["emails"][1]) == ["contact", "email"]


class Inner(serializers.Serializer):
    name = serializers.CharField()
    upper = serializers.CharField(source="shout")  # a method: DRF calls it


class Outer(serializers.Serializer):
    inner = Inner()
    inners = Inner(many=True)
    proxied = serializers.CharField(source="proxy.key")  # a mapping that is not a dict
    missing = serializers.CharField(default="fallback")
    absent = serializers.CharField(required=False)  # skipped
    nothing = serializers.CharField(allow_null=True)
    secret = serializers.CharField(write_only=True)


def test_output_is_the_serializers_representation_whatever_the_attributes(project):
    class Thing:
        def __init__(self, name):
            self.name = name

        def shout(self):
            return self.name.upper()

    instance = SimpleNamespace(
        inner=Thing("a"), inners=[Thing("b"), Thing("c")], proxy=MappingProxyType({"key": "k"}), nothing=None
    )
    assert output(Outer)(instance) == Outer(instance).data
    assert output(Outer)(instance) == {
        "inner": {"name": "a", "upper": "A"},
        "inners": [{"name": "b", "upper": "B"}, {"name": "c", "upper": "C"}],
        "proxied": "k",
        "missing": "fallback",
        "nothing": None,
    }


def test_output_walks_the_fields_it_listed_once_without_drfs_serializer(monkeypatch):
    """`output` is the answers' fast path: writing an answer builds no serializer and runs none of DRF's
    `Serializer.to_representation` (a deep copy of the fields and a generic walk per answer)."""
    from messaging.sending.api.serializers import SendResultSerializer

    write = output(SendResultSerializer)
    contact = SimpleNamespace(id=uuid.uuid4(), email="a@b.test")
    sent = {"success": True, "data": {"emails": [SimpleNamespace(contact=contact, email=SimpleNamespace(id=1))]}}
    sent["data"]["timestamp"] = datetime.now(UTC)
    expected = SendResultSerializer(sent).data

    def refused(*args, **kwargs):
        raise AssertionError("DRF's serializer was used")

    monkeypatch.setattr(serializers.Serializer, "to_representation", refused)
    monkeypatch.setattr(serializers.Serializer, "__init__", refused)
    assert write(sent) == expected


def call(project, path: str, *, headers: dict | None = None, **options):
    key = project.keys.public_key if path == "/v1/track" else project.keys.secret_key
    body = TRACK if path == "/v1/track" else SEND
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})}
    return wsgi_call("POST", path, body=json.dumps(body).encode(), headers=headers, **options)


def view(project, path: str, **extra):
    key = project.keys.public_key if path == "/v1/track" else project.keys.secret_key
    return client_with(key).post(path, TRACK if path == "/v1/track" else SEND, format="json", **extra)


def written() -> int:
    return Event.objects.count() + Email.objects.count()


@pytest.mark.parametrize("path", ["/v1/track", "/v1/send"])
def test_a_host_outside_allowed_hosts_is_refused_with_the_400_envelope(project, path):
    served = call(project, path, headers={"Host": "evil.example"})
    viewed = view(project, path, HTTP_HOST="evil.example")
    for answer in (served, viewed):
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert (error["code"], error["statusCode"], answer.json()["success"]) == ("BAD_REQUEST", 400, False)
    assert served.by_django and written() == 0
    assert call(project, path, headers={"Host": "localhost:8000"}).status == 200


@pytest.mark.parametrize("path", ["/v1/track", "/v1/send"])
def test_the_security_settings_apply_to_answers_in_front_of_django_as_to_the_views(project, settings, path):
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = settings.SECURE_HSTS_PRELOAD = True
    settings.SECURE_REFERRER_POLICY = "no-referrer"
    settings.SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin-allow-popups"
    settings.X_FRAME_OPTIONS = "SAMEORIGIN"
    served = call(project, path, secure=True)
    assert (served.status, served.by_django) == (200, False)
    assert served.headers["Strict-Transport-Security"] == "max-age=3600; includeSubDomains; preload"
    assert (served.headers["Referrer-Policy"], served.headers["X-Frame-Options"]) == ("no-referrer", "SAMEORIGIN")
    assert_answered_alike(served, view(project, path, secure=True))
    assert "Strict-Transport-Security" not in call(project, path).headers  # plain http: no HSTS, as Django

    settings.SECURE_SSL_REDIRECT = True
    before = written()
    redirected = call(project, path)
    assert (redirected.status, redirected.by_django) == (301, True)
    assert redirected.headers["Location"] == f"https://localhost{path}" and written() == before
    assert call(project, path, secure=True).by_django is False


class AddsHeader:
    """A middleware an operator might add: every answer gets a header."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response["X-Served-By"] = "herald"
        return response


class SignsBody(AddsHeader):
    """A header that depends on the answer's body: only Django can give it."""

    def __call__(self, request):
        response = self.get_response(request)
        response["X-Body-Digest"] = hashlib.sha256(response.content).hexdigest()
        return response


def test_a_header_added_by_any_middleware_is_on_answers_in_front_of_django(project, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.AddsHeader"]
    served = call(project, "/v1/track")
    assert (served.status, served.by_django, served.headers["X-Served-By"]) == (200, False, "herald")
    assert_answered_alike(served, view(project, "/v1/track"))


@pytest.mark.parametrize("middleware", [f"{__name__}.SignsBody", "django.middleware.gzip.GZipMiddleware"])
def test_a_middleware_that_depends_on_the_body_leaves_the_answer_to_django(project, settings, middleware):
    settings.MIDDLEWARE = [middleware, *settings.MIDDLEWARE]
    answer = call(project, "/v1/send", headers={"Accept-Encoding": "gzip"})
    assert (answer.status, answer.by_django) == (200, True)
    assert Email.objects.count() == 1


@pytest.mark.parametrize(
    ("headers", "query", "status"),
    [
        ({"Accept": "text/html"}, "", 400),  # DRF's content negotiation: 406 Not Acceptable, the API's 400
        ({}, "tag=%00", 400),  # a NUL in the query (core.http.sanity)
        ({}, "utm=mail", 200),
        ({"Cookie": "sessionid=x"}, "", 200),
    ],
    ids=["accept-html", "nul-in-query", "query", "cookie"],
)
def test_what_the_view_reads_beyond_key_and_body_leaves_the_request_to_django(project, headers, query, status):
    answer = call(project, "/v1/track", headers=headers, query=query)
    assert (answer.status, answer.by_django) == (status, True)
    assert Event.objects.count() == (1 if status == 200 else 0)
    assert call(project, "/v1/track", headers={"Accept": "application/json"}).by_django is False


def test_disallowed_user_agents_leave_every_request_to_django(project, settings):
    settings.DISALLOWED_USER_AGENTS = [re.compile(r"^BadBot")]
    refused = call(project, "/v1/track", headers={"User-Agent": "BadBot/1.0"})
    assert (refused.status, refused.by_django, Event.objects.count()) == (403, True, 0)


@pytest.mark.urls("config.tests.probe_urls")
@pytest.mark.parametrize(
    ("asked", "status"), [({}, 200), ({"status": 500}, 500)], ids=["succeeds", "fails-after-write"]
)
def test_a_handler_that_fails_after_writing_is_answered_500_in_front_of_django_and_runs_once(project, asked, status):
    from accounts.http.fastroute import with_fast_routes
    from accounts.models import Job
    from config.wsgi import django_application

    application = with_fast_routes(django_application, [FastRoute.at("/probe/handler")])
    headers = {"Authorization": f"Bearer {project.keys.secret_key}", "Content-Type": "application/json"}
    body = json.dumps({"name": "probe", **asked}).encode()
    answer = wsgi_call("POST", "/probe/handler", body=body, headers=headers, application=application)
    assert (answer.status, answer.by_django) == (status, False)
    assert Job.objects.filter(project=project.project, type="probe").count() == 1
    if status == 500:
        error = answer.json()["error"]
        assert (error["code"], error["statusCode"]) == ("INTERNAL_SERVER_ERROR", 500)
        assert error["requestId"] == answer.headers["X-Request-Id"]
