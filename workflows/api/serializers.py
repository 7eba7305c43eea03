"""Input and output serializers of the workflows endpoints, with explicit camelCase names."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from contacts.data_rules import data_size
from core.http.fields import IsoDateTimeField, StrictBooleanField, StrictCharField, StrictEmailField
from core.http.pagination import NumberedPageSerializer
from core.http.serializers import OutputSerializer
from workflows.models import (
    Branch,
    ExecutionStatus,
    StepExecutionStatus,
    StepType,
    TriggerType,
    WaitOutcome,
)

ADDABLE_STEP_TYPES = [choice for choice in StepType.values if choice != StepType.TRIGGER]
MAX_CONTEXT_BYTES = 64 * 1024


def _pattern(values: list[str]) -> dict:
    return {"type": "string", "pattern": f"^({'|'.join(values)})$", "description": " or ".join(values)}


# Enums are described by a pattern: spectacular names an enum after its field, and `type`, `status` and `branch`
# would collide with the templates' and campaigns' enums of those names.
@extend_schema_field(_pattern(StepType.values))
class StepTypeField(serializers.ChoiceField):
    def __init__(self, choices=StepType.choices, **kwargs):
        super().__init__(choices=choices, **kwargs)


@extend_schema_field(_pattern(ADDABLE_STEP_TYPES))
class AddableStepTypeField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=ADDABLE_STEP_TYPES, **kwargs)


@extend_schema_field(_pattern(ExecutionStatus.values))
class ExecutionStatusField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=ExecutionStatus.choices, **kwargs)


@extend_schema_field(_pattern(StepExecutionStatus.values))
class StepExecutionStatusField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=StepExecutionStatus.choices, **kwargs)


@extend_schema_field({**_pattern(Branch.values), "nullable": True})
class BranchField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=Branch.choices, allow_null=True, **kwargs)


@extend_schema_field({**_pattern(WaitOutcome.values), "nullable": True})
class WaitOutcomeField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=WaitOutcome.choices, allow_null=True, **kwargs)


@extend_schema_field(_pattern(TriggerType.values))
class TriggerTypeField(serializers.ChoiceField):
    def __init__(self, **kwargs):
        super().__init__(choices=TriggerType.choices, **kwargs)


# Output -----------------------------------------------------------------------------------------------------------


class TriggerConfigOutputSerializer(OutputSerializer):
    eventName = serializers.CharField(allow_null=True)


class WorkflowOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    enabled = serializers.BooleanField()
    triggerType = TriggerTypeField(source="trigger_type")
    triggerConfig = TriggerConfigOutputSerializer(source="trigger_config")
    allowReentry = serializers.BooleanField(source="allow_reentry")
    projectId = serializers.UUIDField(source="project_id")
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


class WorkflowListItemSerializer(WorkflowOutputSerializer):
    stepCount = serializers.IntegerField(source="step_count")
    executionCount = serializers.IntegerField(source="execution_count")


class PositionSerializer(serializers.Serializer):
    x = serializers.FloatField()
    y = serializers.FloatField()


class StepOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    type = StepTypeField()
    name = serializers.CharField()
    position = serializers.JSONField()
    config = serializers.JSONField()
    templateId = serializers.UUIDField(source="template_id", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


class TransitionOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    fromStepId = serializers.UUIDField(source="from_step_id")
    toStepId = serializers.UUIDField(source="to_step_id")
    branch = BranchField(source="branch_or_none")
    waitOutcome = WaitOutcomeField(source="wait_outcome_or_none")


class WorkflowDetailSerializer(WorkflowOutputSerializer):
    # Read from the prefetched, ordered relations (`selectors.workflow_with_graph`).
    steps = StepOutputSerializer(many=True)
    transitions = TransitionOutputSerializer(many=True)


class WorkflowPageSerializer(NumberedPageSerializer):
    data = WorkflowListItemSerializer(many=True, source="rows")


class TypedFieldSerializer(OutputSerializer):
    field = serializers.CharField()
    type = serializers.CharField()
    category = serializers.CharField()


class WorkflowFieldsSerializer(serializers.Serializer):
    fields = serializers.ListField(child=serializers.CharField())
    typedFields = TypedFieldSerializer(many=True)
    count = serializers.IntegerField()


class ExecutionContactSerializer(OutputSerializer):
    id = serializers.UUIDField()
    email = serializers.CharField()


class StepSummarySerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    type = StepTypeField()


class ExecutionOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    workflowId = serializers.UUIDField(source="workflow_id")
    contactId = serializers.UUIDField(source="contact_id")
    contact = ExecutionContactSerializer()
    status = ExecutionStatusField()
    currentStepId = serializers.UUIDField(source="current_step_id", allow_null=True)
    currentStep = StepSummarySerializer(source="current_step", allow_null=True)
    exitReason = serializers.CharField(source="exit_reason_or_none", allow_null=True)
    context = serializers.JSONField()
    startedAt = IsoDateTimeField(source="started_at")
    completedAt = IsoDateTimeField(source="completed_at", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")
    updatedAt = IsoDateTimeField(source="updated_at")


class StepExecutionOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    stepId = serializers.UUIDField(source="step_id", allow_null=True)
    step = StepSummarySerializer(allow_null=True)
    status = StepExecutionStatusField()
    scheduledFor = IsoDateTimeField(source="scheduled_for", allow_null=True)
    output = serializers.JSONField(allow_null=True)
    error = serializers.CharField(source="error_or_none", allow_null=True)
    startedAt = IsoDateTimeField(source="started_at", allow_null=True)
    completedAt = IsoDateTimeField(source="completed_at", allow_null=True)


class ExecutionDetailSerializer(ExecutionOutputSerializer):
    # Read from the prefetched, ordered relation (`selectors.execution_with_steps`).
    stepExecutions = StepExecutionOutputSerializer(many=True, source="step_executions")


class ExecutionPageSerializer(NumberedPageSerializer):
    data = ExecutionOutputSerializer(many=True, source="rows")


class CancelledCountSerializer(serializers.Serializer):
    cancelled = serializers.IntegerField()


# Input ------------------------------------------------------------------------------------------------------------


class TriggerConfigInputSerializer(serializers.Serializer):
    eventName = StrictCharField(max_length=255, required=False, allow_blank=True, allow_null=True)


class WorkflowCreateInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=255)
    description = StrictCharField(max_length=5000, required=False, allow_blank=True)
    triggerConfig = TriggerConfigInputSerializer(required=False)


class WorkflowUpdateInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=255, required=False)
    description = StrictCharField(max_length=5000, required=False, allow_blank=True)
    triggerType = TriggerTypeField(required=False)
    triggerConfig = TriggerConfigInputSerializer(required=False)
    enabled = StrictBooleanField(required=False)
    allowReentry = StrictBooleanField(required=False)


class StepConfigField(serializers.JSONField):
    """A step's config, checked per step type by workflows.configs (paths like config.amount); its schema is
    workflows.api.schema's."""


class StepCreateInputSerializer(serializers.Serializer):
    type = AddableStepTypeField()
    name = StrictCharField(max_length=255, required=False, allow_blank=True)
    position = PositionSerializer(required=False)
    config = StepConfigField(required=False, allow_null=True)
    autoConnect = StrictBooleanField(required=False, default=True)


class StepUpdateInputSerializer(serializers.Serializer):
    name = StrictCharField(max_length=255, required=False, allow_blank=True)
    position = PositionSerializer(required=False)
    config = StepConfigField(required=False, allow_null=True)


class TransitionCreateInputSerializer(serializers.Serializer):
    fromStepId = serializers.UUIDField()
    toStepId = serializers.UUIDField()
    branch = BranchField(required=False)
    waitOutcome = WaitOutcomeField(required=False)


class ExecutionStartInputSerializer(serializers.Serializer):
    contactId = serializers.UUIDField(required=False)
    email = StrictEmailField(required=False)
    context = serializers.DictField(required=False, allow_null=True)

    def validate_context(self, value):
        if value is not None and data_size(value) > MAX_CONTEXT_BYTES:
            raise serializers.ValidationError(f"Must be at most {MAX_CONTEXT_BYTES // 1024} KB of JSON", "max_length")
        return value

    def validate(self, attrs):
        if not attrs.get("contactId") and not attrs.get("email"):
            raise serializers.ValidationError(
                {"contactId": serializers.ErrorDetail("Required: contactId or email", "required")}
            )
        return attrs
