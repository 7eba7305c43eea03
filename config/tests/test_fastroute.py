"""The fast route in front of Django (config.api.fastroute) is its view taken apart at start-up, so the two cannot
answer differently: a view whose validation or other steps the route would skip is refused when the route is
built, and the answer of both is the one handler's, built with the endpoint's output serializer."""

import uuid
from datetime import UTC, datetime
from types import MappingProxyType, SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser

from config.api.authentication import PublicKeyAuthentication
from config.api.fastroute import FastRoute
from config.api.output import output
from config.api.permissions import HasProject
from config.api.validation import validated_fields
from config.api.views import HandlerView

pytestmark = pytest.mark.django_db


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
    from contacts.services import event_track
    from messaging.sending.serializers import SendResultSerializer

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
