"""The fast route in front of Django (config.api.fastroute) validates a body field by field with the view's
serializer; a serializer with a hook that way of validating would skip is refused when the route is built."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework import serializers

from accounts.keys import KeyKind
from config.api.fastroute import FastRoute
from config.api.validation import validated_fields


def route_of(serializer_class) -> FastRoute:
    return FastRoute(
        path="/probe", key_kind=KeyKind.PUBLIC, serializer=serializer_class(), handle=lambda project, values, p: {}
    )


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
