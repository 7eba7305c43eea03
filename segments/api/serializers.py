"""Input and output serializers of the segments endpoints, with explicit camelCase names."""

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from contacts.api.serializers import ContactOutputSerializer
from core.http.fields import IsoDateTimeField, StrictBooleanField, StrictCharField, StrictEmailField
from core.http.pagination import NumberedPageSerializer
from core.http.serializers import OutputSerializer
from segments.conditions.schema import ConditionField
from segments.models import SegmentType


class SegmentTypeField(serializers.ChoiceField):
    """`DYNAMIC` or `STATIC`: the schema's `SegmentTypeEnum` (named in ENUM_NAME_OVERRIDES, since other enums are
    named after a `type` field too)."""

    def __init__(self, **kwargs):
        super().__init__(choices=SegmentType.choices, **kwargs)


class SegmentOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    type = SegmentTypeField()
    condition = ConditionField(allow_null=True)
    trackMembership = serializers.BooleanField(source="track_membership")
    memberCount = serializers.IntegerField(source="member_count")
    projectId = serializers.UUIDField(source="project_id")
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


class SegmentCreateInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    type = SegmentTypeField(required=False, default=SegmentType.DYNAMIC)
    # The tree is checked by segments.conditions (paths like condition.groups.0.filters.1.operator).
    condition = ConditionField(required=False, allow_null=True)
    trackMembership = StrictBooleanField(required=False, default=False)


class SegmentCreateInputScheme(OpenApiSerializerExtension):
    """What the create requires beyond the serializer: a DYNAMIC segment (the default type) its condition."""

    target_class = SegmentCreateInputSerializer

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        # Patterns, not enums: spectacular would take an enum here for the `type` property's own.
        schema["anyOf"] = [
            {
                "required": ["condition"],
                "properties": {"type": {"type": "string", "pattern": "^DYNAMIC$"}, "condition": {"type": "object"}},
            },
            {"required": ["type"], "properties": {"type": {"type": "string", "pattern": "^STATIC$"}}},
        ]
        return schema


class SegmentUpdateInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=100, required=False)
    description = StrictCharField(max_length=500, required=False, allow_blank=True)
    condition = ConditionField(required=False, allow_null=True)
    trackMembership = StrictBooleanField(required=False)


class SegmentMembersPageSerializer(NumberedPageSerializer):
    data = ContactOutputSerializer(many=True, source="rows")


class SegmentRefreshOutputSerializer(OutputSerializer):  # of a Segment
    memberCount = serializers.IntegerField(source="member_count")


MAX_MEMBER_EMAILS = 500


class MembersAddInputSerializer(serializers.Serializer):
    emails = serializers.ListField(child=StrictEmailField(), min_length=1, max_length=MAX_MEMBER_EMAILS)
    createMissing = StrictBooleanField(required=False, default=False)
    subscribed = StrictBooleanField(required=False, allow_null=True, default=None)


class MembersAddOutputSerializer(OutputSerializer):  # of a segments.services.MembersAdded
    added = serializers.IntegerField()
    created = serializers.IntegerField()
    notFound = serializers.ListField(child=serializers.CharField(), source="not_found")


class MembersRemoveInputSerializer(serializers.Serializer):
    emails = serializers.ListField(child=StrictEmailField(), min_length=1, max_length=MAX_MEMBER_EMAILS)


class MembersRemoveOutputSerializer(OutputSerializer):
    removed = serializers.IntegerField()


class ComputeOutputSerializer(OutputSerializer):  # of a segments.services.ComputeResult
    added = serializers.IntegerField()
    removed = serializers.IntegerField()
    total = serializers.IntegerField()
