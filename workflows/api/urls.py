from django.urls import path

from workflows.api.views import WorkflowViewSet

workflows = WorkflowViewSet.as_view
WORKFLOW = "workflows/<str:pk>"
# Steps and transitions are read with their workflow.
IN_WORKFLOW = {"GET": "A workflow's steps and transitions come with it: GET /workflows/{id}"}

# Fixed paths before parameterised ones: /workflows/fields is not a workflow id, …/executions/cancel-all not an
# execution id.
urlpatterns = [
    path("workflows", workflows({"get": "list", "post": "create"}), name="workflow-list"),
    path("workflows/fields", workflows({"get": "fields"}), name="workflow-fields"),
    path(
        WORKFLOW,
        workflows({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="workflow-detail",
    ),
    path(f"{WORKFLOW}/steps", workflows({"post": "step_create"}, method_hints=IN_WORKFLOW), name="workflow-steps"),
    path(
        f"{WORKFLOW}/steps/<str:step_id>",
        workflows({"patch": "step_update", "delete": "step_delete"}, method_hints=IN_WORKFLOW),
        name="workflow-step",
    ),
    path(
        f"{WORKFLOW}/transitions",
        workflows({"post": "transition_create"}, method_hints=IN_WORKFLOW),
        name="workflow-transitions",
    ),
    path(
        f"{WORKFLOW}/transitions/<str:transition_id>",
        workflows({"delete": "transition_delete"}, method_hints=IN_WORKFLOW),
        name="workflow-transition",
    ),
    path(
        f"{WORKFLOW}/executions",
        workflows({"get": "execution_list", "post": "execution_start"}),
        name="workflow-executions",
    ),
    path(f"{WORKFLOW}/executions/cancel-all", workflows({"post": "cancel_all"}), name="workflow-executions-cancel"),
    path(
        f"{WORKFLOW}/executions/<str:execution_id>",
        workflows({"get": "execution_retrieve", "delete": "execution_cancel"}),
        name="workflow-execution",
    ),
]
