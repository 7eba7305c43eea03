"""Workflows endpoints: parse, call one service or selector, serialize. Steps, transitions and executions are
reached through their workflow, which the base class scopes to the caller's project."""

import uuid

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from accounts.http.views import ProjectScopedViewSet
from contacts.selectors import contact_get
from core.errors import NotFound, ValidationFailed
from core.http.pagination import offset_page, ordering
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.schema import count_parameter
from core.http.validation import validate
from workflows import selectors, services
from workflows.api import schema  # noqa: F401 (registers the step unions of the OpenAPI schema)
from workflows.api import serializers as s
from workflows.models import ExecutionStatus, Workflow

WORKFLOW_SORT = {"name": "name", "createdAt": "created_at", "updatedAt": "updated_at"}
WORKFLOW_STATUS = {"active": True, "disabled": False}
PAGE_PARAMETERS = [
    count_parameter("page", "1-based page number (default 1)"),
    count_parameter("pageSize", "1 to 100 (default 20; larger values are clamped)"),
]


def _one(queryset: QuerySet, value, kind: str):
    """The row of `queryset` with id `value`, or 404 `<KIND>_NOT_FOUND` (an id that is not a UUID included)."""
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise NotFound(kind, value) from None
    found = queryset.filter(id=value).first()
    if found is None:
        raise NotFound(kind, value)
    return found


def _enum_param(params, name: str, allowed) -> str | None:
    value = params.get(name) or None
    if value is not None and value not in allowed:
        raise ValidationFailed.field(
            name, f"Expected one of {', '.join(allowed)}", "invalid_enum_value", received=value
        )
    return value


def _unset(values: dict, key: str):
    return values.get(key, services.UNSET)


class WorkflowViewSet(ProjectScopedViewSet):
    queryset = Workflow.objects.all()
    resource_name = "Workflow"

    @extend_schema(
        operation_id="workflows_list",
        parameters=[
            *PAGE_PARAMETERS,
            OpenApiParameter("search", str, description="Case-insensitive, in name and description"),
            OpenApiParameter("status", str, enum=list(WORKFLOW_STATUS)),
            OpenApiParameter("sort", str, enum=list(WORKFLOW_SORT)),
            OpenApiParameter("dir", str, enum=["asc", "desc"]),
        ],
        responses={200: s.WorkflowPageSerializer, 422: ERROR},
    )
    def list(self, request):
        params = request.query_params
        status = _enum_param(params, "status", WORKFLOW_STATUS)
        queryset = selectors.workflow_list(
            project=self.project,
            search=(params.get("search") or "").strip(),
            enabled=WORKFLOW_STATUS[status] if status else None,
        )
        page = offset_page(queryset.order_by(*ordering(params, WORKFLOW_SORT, "createdAt")), params)
        return Response(s.WorkflowPageSerializer(page).data)

    @extend_schema(
        operation_id="workflows_create",
        request=s.WorkflowCreateInputSerializer,
        responses={201: s.WorkflowOutputSerializer, 422: ERROR},
    )
    def create(self, request):
        data = validate(s.WorkflowCreateInputSerializer, request.data)
        workflow = services.workflow_create(
            project=self.project,
            name=data["name"],
            description=data.get("description", ""),
            event_name=(data.get("triggerConfig") or {}).get("eventName") or "",
        )
        return Response(s.WorkflowOutputSerializer(workflow).data, status=201)

    @extend_schema(
        operation_id="workflows_fields",
        parameters=[OpenApiParameter("eventName", str, description="Add `context.<key>` fields of these events")],
        responses={200: s.WorkflowFieldsSerializer},
    )
    def fields(self, request):
        fields = selectors.workflow_fields(project=self.project, event_name=request.query_params.get("eventName", ""))
        return Response(
            {
                "fields": [item["field"] for item in fields],
                "typedFields": s.TypedFieldSerializer(fields, many=True).data,
                "count": len(fields),
            }
        )

    @extend_schema(operation_id="workflows_get", responses={200: s.WorkflowDetailSerializer, 404: ERROR})
    def retrieve(self, request, pk=None):
        workflow = selectors.workflow_with_graph(workflow=self.get_object())
        return Response(s.WorkflowDetailSerializer(workflow).data)

    @extend_schema(
        operation_id="workflows_update",
        request=s.WorkflowUpdateInputSerializer,
        responses={200: s.WorkflowOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def partial_update(self, request, pk=None):
        workflow = self.get_object()
        data = validate(s.WorkflowUpdateInputSerializer, request.data)
        trigger = data.get("triggerConfig")
        workflow = services.workflow_update(
            workflow=workflow,
            name=_unset(data, "name"),
            description=_unset(data, "description"),
            trigger_type=_unset(data, "triggerType"),
            event_name=(trigger.get("eventName") or "") if trigger is not None else services.UNSET,
            enabled=_unset(data, "enabled"),
            allow_reentry=_unset(data, "allowReentry"),
        )
        return Response(s.WorkflowOutputSerializer(workflow).data)

    @extend_schema(operation_id="workflows_delete", responses={204: None, 404: ERROR, 409: ERROR})
    def destroy(self, request, pk=None):
        services.workflow_delete(workflow=self.get_object())
        return Response(status=204)

    # Steps and transitions ------------------------------------------------------------------------------------------

    @extend_schema(
        operation_id="workflows_steps_create",
        request=s.StepCreateInputSerializer,
        responses={201: s.StepOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def step_create(self, request, pk=None):
        workflow = self.get_object()
        data = validate(s.StepCreateInputSerializer, request.data)
        step = services.step_add(
            workflow=workflow,
            step_type=data["type"],
            config=data.get("config"),
            name=data.get("name", ""),
            position=data.get("position"),
            auto_connect=data["autoConnect"],
        )
        return Response(s.StepOutputSerializer(step).data, status=201)

    @extend_schema(
        operation_id="workflows_steps_update",
        request=s.StepUpdateInputSerializer,
        responses={200: s.StepOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def step_update(self, request, pk=None, step_id=None):
        step = _one(self.get_object().steps.all(), step_id, "Workflow step")
        data = validate(s.StepUpdateInputSerializer, request.data)
        step = services.step_update(
            step=step, name=_unset(data, "name"), position=_unset(data, "position"), config=_unset(data, "config")
        )
        return Response(s.StepOutputSerializer(step).data)

    @extend_schema(
        operation_id="workflows_steps_delete",
        parameters=[
            OpenApiParameter(
                "splice", str, enum=["true", "false"], description="Reconnect the step's predecessors to its successor"
            )
        ],
        responses={204: None, 404: ERROR, 409: ERROR, 422: ERROR},
    )
    def step_delete(self, request, pk=None, step_id=None):
        step = _one(self.get_object().steps.all(), step_id, "Workflow step")
        services.step_delete(step=step, splice=request.query_params.get("splice") == "true")
        return Response(status=204)

    @extend_schema(
        operation_id="workflows_transitions_create",
        request=s.TransitionCreateInputSerializer,
        responses={201: s.TransitionOutputSerializer, 404: ERROR, 422: ERROR},
    )
    def transition_create(self, request, pk=None):
        workflow = self.get_object()
        data = validate(s.TransitionCreateInputSerializer, request.data)
        transition = services.transition_add(
            workflow=workflow,
            from_step_id=data["fromStepId"],
            to_step_id=data["toStepId"],
            branch=data.get("branch"),
            wait_outcome=data.get("waitOutcome"),
        )
        return Response(s.TransitionOutputSerializer(transition).data, status=201)

    @extend_schema(operation_id="workflows_transitions_delete", responses={204: None, 404: ERROR})
    def transition_delete(self, request, pk=None, transition_id=None):
        transition = _one(self.get_object().transitions.all(), transition_id, "Workflow transition")
        services.transition_delete(transition=transition)
        return Response(status=204)

    # Executions -----------------------------------------------------------------------------------------------------

    @extend_schema(
        operation_id="workflows_executions_list",
        parameters=[*PAGE_PARAMETERS, OpenApiParameter("status", str, enum=ExecutionStatus.values)],
        responses={200: s.ExecutionPageSerializer, 404: ERROR, 422: ERROR},
    )
    def execution_list(self, request, pk=None):
        workflow = self.get_object()
        status = _enum_param(request.query_params, "status", ExecutionStatus.values)
        queryset = selectors.execution_list(workflow=workflow, status=status)
        page = offset_page(queryset.order_by("-created_at", "-id"), request.query_params)
        return Response(s.ExecutionPageSerializer(page).data)

    @extend_schema(
        operation_id="workflows_executions_start",
        request=s.ExecutionStartInputSerializer,
        responses={201: s.ExecutionOutputSerializer, 404: ERROR, 409: ERROR, 422: ERROR},
    )
    def execution_start(self, request, pk=None):
        workflow = self.get_object()
        data = validate(s.ExecutionStartInputSerializer, request.data)
        contact = contact_get(project=self.project, contact_id=data.get("contactId"), email=data.get("email", ""))
        execution = services.execution_start(workflow=workflow, contact=contact, context=data.get("context"))
        return Response(s.ExecutionOutputSerializer(execution).data, status=201)

    @extend_schema(operation_id="workflows_executions_get", responses={200: s.ExecutionDetailSerializer, 404: ERROR})
    def execution_retrieve(self, request, pk=None, execution_id=None):
        executions = selectors.execution_details(workflow=self.get_object())
        execution = _one(executions, execution_id, "Workflow execution")
        return Response(s.ExecutionDetailSerializer(execution).data)

    @extend_schema(
        operation_id="workflows_executions_cancel",
        responses={200: s.ExecutionOutputSerializer, 404: ERROR, 409: ERROR},
    )
    def execution_cancel(self, request, pk=None, execution_id=None):
        execution = _one(self.get_object().executions.all(), execution_id, "Workflow execution")
        execution = services.execution_cancel(execution=execution)
        return Response(s.ExecutionOutputSerializer(execution).data)

    @extend_schema(
        operation_id="workflows_executions_cancel_all",
        request=None,
        responses={200: s.CancelledCountSerializer, 404: ERROR},
    )
    def cancel_all(self, request, pk=None):
        return Response({"cancelled": services.executions_cancel_all(workflow=self.get_object())})
