"""Input and output serializers of the domains endpoints and /v1/verify, with explicit camelCase names."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.serializers import OutputSerializer
from domains import records
from domains.models import Domain


class DomainCreateInputSerializer(serializers.Serializer):
    domain = serializers.CharField(max_length=300)
    projectId = serializers.CharField(required=False, allow_null=True)


class DomainRecordOutputSerializer(OutputSerializer):  # of a domains.records.records_json item
    type = serializers.CharField()
    name = serializers.CharField()
    value = serializers.CharField()
    purpose = serializers.ChoiceField(choices=[purpose.value for purpose in records.Purpose])
    required = serializers.BooleanField()
    status = serializers.ChoiceField(choices=[status.value for status in records.CheckStatus])
    lastError = serializers.CharField(allow_null=True)


class DomainOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    domain = serializers.CharField(source="name")
    status = serializers.ChoiceField(choices=Domain.Status.choices)
    verified = serializers.BooleanField(source="is_verified")
    records = serializers.SerializerMethodField()
    dkimSelector = serializers.CharField(source="dkim_selector")
    lastCheckedAt = IsoDateTimeField(source="last_checked_at", allow_null=True)
    verifiedAt = IsoDateTimeField(source="verified_at", allow_null=True)
    projectId = serializers.UUIDField(source="project_id")
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")

    @extend_schema_field(DomainRecordOutputSerializer(many=True))
    def get_records(self, domain) -> list[dict]:
        return DomainRecordOutputSerializer(records.records_json(domain), many=True).data


class VerifyInputSerializer(serializers.Serializer):
    # 320 characters and more are refused outright (the bound); anything shorter is judged and answered.
    email = serializers.CharField(max_length=319, trim_whitespace=True)


class VerifyOutputSerializer(serializers.Serializer):
    email = serializers.CharField()
    valid = serializers.BooleanField()
    isDisposable = serializers.BooleanField(source="is_disposable")
    isAlias = serializers.BooleanField(source="is_alias")
    isTypo = serializers.BooleanField(source="is_typo")
    isPlusAddressed = serializers.BooleanField(source="is_plus_addressed")
    isPersonalEmail = serializers.BooleanField(source="is_personal_email")
    domainExists = serializers.BooleanField(source="domain_exists")
    hasWebsite = serializers.BooleanField(source="has_website")
    hasMxRecords = serializers.BooleanField(source="has_mx_records")
    reasons = serializers.ListField(child=serializers.CharField())
    suggestedEmail = serializers.CharField(source="suggested_email", required=False)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if data.get("suggestedEmail") is None:
            data.pop("suggestedEmail", None)  # present only with a typo, as in the reference
        return data
