"""Serializer fields every API module uses: JSON types taken strictly (no "true" for true, no 1 for "1"), and
timestamps written in the API's one format."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.time import iso


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Expected boolean", code="invalid_type")
        return data


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Expected string", code="invalid_type")
        return super().to_internal_value(data)


class StrictEmailField(serializers.EmailField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Expected string", code="invalid_type")
        value = super().to_internal_value(data.strip())
        return value.lower()


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JsonObjectField(serializers.JSONField):
    """A stored JSON object (contact data, event data, activity metadata), written as stored: described as an
    object in the schema (a DictField would copy it on every row)."""


class IsoDateTimeField(serializers.DateTimeField):
    def to_representation(self, value):
        return iso(value)
