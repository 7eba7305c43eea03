"""Probe endpoints that exercise the API base classes in isolation from any app.

They do real work on real models (a Job row per call) so that the tests can see whether a request wrote
anything; the app endpoints repeat the important cases through their own routes.
"""

import time

from django.urls import include, path
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter

from accounts.http.authentication import PublicKeyAuthentication
from accounts.http.views import ApiView, HandlerView, ProjectScopedViewSet
from accounts.jobs.services import job_create
from accounts.models import Job
from core.errors import BadRequest
from core.http.fields import IsoDateTimeField
from core.http.pagination import CursorPageSerializer, CursorSort, cursor_page
from core.http.serializers import OutputSerializer
from core.http.validation import validate


class ProbeInput(serializers.Serializer):
    name = serializers.CharField(max_length=10)
    email = serializers.EmailField(required=False)
    count = serializers.IntegerField(required=False, min_value=1)
    kind = serializers.ChoiceField(choices=["a", "b"], required=False)
    tags = serializers.ListField(child=serializers.EmailField(), required=False)
    sleep = serializers.FloatField(required=False)
    status = serializers.IntegerField(required=False)


class SecretProbe(ApiView):
    def get(self, request):
        return Response({"project": str(request.auth.project.id)})


class PublicProbe(ApiView):
    authentication_classes = [PublicKeyAuthentication]

    def post(self, request):
        return Response({"project": str(request.auth.project.id)})


class WritingProbe(ApiView):
    """Writes a Job, then fails as asked: shows that a failed request leaves nothing behind."""

    idempotent = True

    def post(self, request):
        data = validate(ProbeInput, request.data)
        job = job_create(project=request.auth.project, type=data["name"])
        if data.get("sleep"):
            time.sleep(data["sleep"])
        if data.get("status") == 400:
            raise BadRequest("asked to fail")
        if data.get("status") == 500:
            raise RuntimeError("asked to crash")
        return Response({"job": str(job.id)})


def _write_then_fail(project, values: dict, payload: dict) -> dict:
    job = job_create(project=project, type=values["name"])
    if values.get("status") == 500:
        raise RuntimeError("asked to crash after writing")
    return {"job": str(job.id)}


class WriteThenFailProbe(HandlerView):
    """A handler in autocommit (as /v1/send's and /v1/track's) that writes a Job, then fails as asked: a failure
    after its write must not have the write made twice."""

    atomic_writes = False
    input_serializer = ProbeInput
    handler = staticmethod(_write_then_fail)

    def post(self, request):
        return self.handled(request)


class ProbeJobOutput(OutputSerializer):
    id = serializers.UUIDField()
    type = serializers.CharField()
    createdAt = IsoDateTimeField(source="created_at")


class ProbeJobPage(CursorPageSerializer):
    data = ProbeJobOutput(many=True, source="rows")


class JobViewSet(ProjectScopedViewSet):
    queryset = Job.objects.all()
    resource_name = "Job"

    def list(self, request):
        sort = CursorSort({"createdAt": "created_at", "type": "type"}, default="createdAt")
        return Response(ProbeJobPage(cursor_page(self.get_queryset(), request.query_params, sort=sort)).data)

    def retrieve(self, request, pk=None):
        return Response({"id": str(self.get_object().id)})


router = SimpleRouter(trailing_slash=False)
router.register("probe/jobs", JobViewSet, basename="probe-jobs")

urlpatterns = [
    path("probe/secret", SecretProbe.as_view()),
    path("probe/public", PublicProbe.as_view()),
    path("probe/write", WritingProbe.as_view()),
    path("probe/handler", WriteThenFailProbe.as_view()),
    path("", include(router.urls)),
    path("", include("config.urls")),
]
