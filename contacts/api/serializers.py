"""Input and output serializers of the contacts and events endpoints, with explicit camelCase names.

Input fields are strict about JSON types (a string is not a boolean): a value of the wrong type is 422
`invalid_type` (docs/api/README.md).
"""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.models import Job
from contacts.data_rules import validate_data
from contacts.selectors import FIELD_TYPES
from contacts.services import event_name_is_reserved
from core.http.fields import (
    IsoDateTimeField,
    JsonObjectField,
    StrictBooleanField,
    StrictCharField,
    StrictEmailField,
)
from core.http.pagination import CursorPageSerializer
from core.http.schema import JSON_OBJECT
from core.http.serializers import OutputSerializer

MAX_LOOKUP_EMAILS = 500
MAX_BULK_IDS = 1000


@extend_schema_field(JSON_OBJECT)
class DataField(serializers.JSONField):
    """A contact `data` object, checked by the data rules' shape checks (object, 64 KB, keys, locale)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        validate_data(data, field_name=self.field_name)
        return data


class EventNameField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=255, **kwargs)

    def to_internal_value(self, data):
        name = super().to_internal_value(data)
        if event_name_is_reserved(name):
            raise serializers.ValidationError(
                f'Event name "{name}" is reserved for system use and cannot be manually tracked',
                code="reserved_event",
            )
        return name


# Contacts -----------------------------------------------------------------------------------------------------------


class ContactOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    email = serializers.CharField()
    subscribed = serializers.BooleanField()
    snoozedUntil = IsoDateTimeField(source="snoozed_until", allow_null=True)
    data = JsonObjectField()
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


class ContactMetaSerializer(OutputSerializer):  # of a contacts.upsert.UpsertResult
    isNew = serializers.BooleanField(source="created")
    isUpdate = serializers.BooleanField(source="existed")


class ContactUpsertOutputSerializer(ContactOutputSerializer):
    # Of a contacts.upsert.UpsertResult: its contact's fields, then `_meta`. Written in two parts, since the
    # contact's fields are attributes of `result.contact` (an output field reads one attribute of its row).
    _meta = ContactMetaSerializer()

    def to_representation(self, result):
        return {**ContactOutputSerializer(result.contact).data, "_meta": ContactMetaSerializer(result).data}


class ContactPageSerializer(CursorPageSerializer):
    data = ContactOutputSerializer(many=True, source="rows")


class ContactCreateInputSerializer(serializers.Serializer):
    email = StrictEmailField()
    subscribed = StrictBooleanField(required=False)
    data = DataField()


class ContactUpdateInputSerializer(serializers.Serializer):
    email = StrictEmailField(required=False)
    subscribed = StrictBooleanField(required=False)
    data = DataField()


class ContactLookupInputSerializer(serializers.Serializer):
    emails = serializers.ListField(child=StrictEmailField(), min_length=1, max_length=MAX_LOOKUP_EMAILS)


class ContactRefSerializer(OutputSerializer):
    id = serializers.UUIDField()
    email = serializers.CharField()


class ContactLookupOutputSerializer(OutputSerializer):  # of a contacts.selectors.ContactLookup
    found = ContactRefSerializer(many=True)
    notFound = serializers.ListField(child=serializers.CharField(), source="not_found")


class FieldSerializer(OutputSerializer):
    field = serializers.CharField()
    type = serializers.ChoiceField(choices=FIELD_TYPES)
    coverage = serializers.IntegerField()


class FieldListSerializer(OutputSerializer):
    fields = FieldSerializer(many=True)
    count = serializers.IntegerField()


class FieldValueSerializer(OutputSerializer):
    value = serializers.JSONField()
    count = serializers.IntegerField()


class FieldValuesSerializer(OutputSerializer):
    field = serializers.CharField()
    values = FieldValueSerializer(many=True)
    count = serializers.IntegerField()


class UsageItemSerializer(OutputSerializer):
    id = serializers.CharField()
    name = serializers.CharField()


class FieldUsedInSerializer(OutputSerializer):
    segments = UsageItemSerializer(many=True)
    campaigns = UsageItemSerializer(many=True)
    workflows = UsageItemSerializer(many=True)
    templates = UsageItemSerializer(many=True)


class FieldUsageSerializer(OutputSerializer):  # of a contacts.usage.FieldUsage
    field = serializers.CharField()
    usedIn = FieldUsedInSerializer(source="used_in")
    contactCount = serializers.IntegerField(source="contact_count")
    canDelete = serializers.BooleanField(source="can_delete")


class ImportInputSerializer(serializers.Serializer):
    file = serializers.FileField()


class JobAcceptedSerializer(OutputSerializer):
    jobId = serializers.UUIDField(source="job_id")
    message = serializers.CharField()


class JobErrorSerializer(serializers.Serializer):  # schema only: JobResultField writes the stored result
    row = serializers.IntegerField()
    email = serializers.CharField(allow_null=True)
    error = serializers.CharField()
    contactId = serializers.CharField(required=False)


class JobResultSerializer(serializers.Serializer):  # schema only, as JobErrorSerializer
    # Empty (`{}`) until the job has reported, hence not required.
    totalRows = serializers.IntegerField(required=False)
    successCount = serializers.IntegerField(required=False)
    createdCount = serializers.IntegerField(required=False)
    updatedCount = serializers.IntegerField(required=False)
    unchangedCount = serializers.IntegerField(required=False)
    failureCount = serializers.IntegerField(required=False)
    deletedCount = serializers.IntegerField(required=False)
    errors = JobErrorSerializer(many=True, required=False)


@extend_schema_field(JobResultSerializer)
class JobResultField(serializers.JSONField):
    """A job's result, written as the job stored it (its keys in the stored order)."""


class JobSerializer(OutputSerializer):  # of an accounts.models.Job
    id = serializers.UUIDField()
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=Job.Status.choices)
    progress = serializers.IntegerField(min_value=0, max_value=100)
    result = JobResultField()
    error = serializers.CharField(source="error_or_none", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    startedAt = IsoDateTimeField(source="started_at", allow_null=True)
    finishedAt = IsoDateTimeField(source="finished_at", allow_null=True)


class BulkInputSerializer(serializers.Serializer):
    contactIds = serializers.ListField(child=serializers.UUIDField(), min_length=1, max_length=MAX_BULK_IDS)


# Events -----------------------------------------------------------------------------------------------------------


class TrackInputSerializer(serializers.Serializer):
    email = StrictEmailField()
    event = EventNameField()
    subscribed = StrictBooleanField(required=False)
    data = DataField()


class TrackDataSerializer(serializers.Serializer):  # of a contacts.upsert.TrackResult
    contact = serializers.UUIDField(source="contact.id")
    event = serializers.UUIDField(source="event.id")
    timestamp = IsoDateTimeField(source="event.created_at")


class TrackOutputSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    data = TrackDataSerializer()


class EventOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    contactId = serializers.UUIDField(source="contact_id")
    emailId = serializers.UUIDField(source="email_id", allow_null=True)
    data = JsonObjectField()
    createdAt = IsoDateTimeField(source="created_at")


class EventPageSerializer(CursorPageSerializer):
    data = EventOutputSerializer(many=True, source="rows")


class EventStatSerializer(OutputSerializer):
    name = serializers.CharField()
    count = serializers.IntegerField()
    uniqueContacts = serializers.IntegerField(source="unique_contacts")


class EventNamesSerializer(OutputSerializer):
    eventNames = serializers.ListField(child=serializers.CharField(), source="event_names")


class EventUsageSerializer(OutputSerializer):
    usedInSegments = UsageItemSerializer(many=True, source="used_in_segments")
    usedInWorkflows = UsageItemSerializer(many=True, source="used_in_workflows")
    totalCount = serializers.IntegerField(source="total_count")
    uniqueContacts = serializers.IntegerField(source="unique_contacts")
    canDelete = serializers.BooleanField(source="can_delete")


class DeletedCountSerializer(OutputSerializer):
    deletedCount = serializers.IntegerField(source="deleted_count")
