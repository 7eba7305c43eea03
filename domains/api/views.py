"""Domains endpoints and POST /v1/verify: parse, call one service or selector, serialize."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework.response import Response

from accounts.http.views import KeyOnlyView, ProjectScopedViewSet
from accounts.models import Membership
from core.errors import Forbidden, NotFound
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.validation import validate
from domains import selectors, services
from domains.api import serializers as s
from domains.models import Domain
from domains.verify import VerifyResult, email_verify


def verify_result_json(result: VerifyResult) -> dict:
    """The Verify result as `VerifyOutputSerializer` describes it (a test holds the two equal), built directly:
    /v1/verify is a hot path and DRF's serializer machinery cost more than the verification itself (~110 us)."""
    data = {
        "email": result.email,
        "valid": result.valid,
        "isDisposable": result.is_disposable,
        "isAlias": result.is_alias,
        "isTypo": result.is_typo,
        "isPlusAddressed": result.is_plus_addressed,
        "isPersonalEmail": result.is_personal_email,
        "domainExists": result.domain_exists,
        "hasWebsite": result.has_website,
        "hasMxRecords": result.has_mx_records,
        "reasons": list(result.reasons),
    }
    if result.suggested_email is not None:
        data["suggestedEmail"] = result.suggested_email
    return data


class DomainViewSet(ProjectScopedViewSet):
    queryset = Domain.objects.all()
    resource_name = "Domain"
    # Sender domains are the project's settings: a session's MEMBER reads them, an ADMIN changes them.
    roles = {"POST": Membership.Role.ADMIN, "DELETE": Membership.Role.ADMIN}

    @extend_schema(
        operation_id="domains_create",
        request=s.DomainCreateInputSerializer,
        responses={201: s.DomainOutputSerializer, 403: ERROR, 409: ERROR, 422: ERROR},
    )
    def create(self, request):
        data = validate(s.DomainCreateInputSerializer, request.data)
        project_id = data.get("projectId")
        if project_id is not None and project_id != str(self.project.id):
            raise Forbidden("projectId must be the project of the API key")
        domain = services.domain_create(project=self.project, name=data["domain"])
        return Response(s.DomainOutputSerializer(domain).data, status=201)

    @extend_schema(operation_id="domains_of_project", responses={200: s.DomainOutputSerializer(many=True), 404: ERROR})
    def of_project(self, request, project_id: str):
        if project_id != str(self.project.id):
            raise NotFound("Project", project_id)
        domains = [services.domain_dkim_key_ensure(domain=d) for d in selectors.domain_list(project=self.project)]
        return Response(s.DomainOutputSerializer(domains, many=True).data)

    @extend_schema(operation_id="domains_verify", responses={200: s.DomainOutputSerializer, 404: ERROR, 409: ERROR})
    def verify(self, request, pk: str):
        domain = services.domain_check(domain=self.get_object())
        return Response(s.DomainOutputSerializer(domain).data)

    @extend_schema(operation_id="domains_delete", responses={204: None, 404: ERROR, 409: ERROR})
    def destroy(self, request, pk: str):
        services.domain_delete(domain=self.get_object())
        return Response(status=204)


class VerifyView(KeyOnlyView):
    @extend_schema(
        operation_id="v1_verify",
        request=s.VerifyInputSerializer,
        responses={
            200: inline_serializer(
                "VerifyResponse",
                {"success": drf_serializers.BooleanField(), "data": s.VerifyOutputSerializer()},
            ),
            422: ERROR,
        },
    )
    def post(self, request):
        data = validate(s.VerifyInputSerializer, request.data)
        result = email_verify(email=data["email"])
        return Response({"success": True, "data": verify_result_json(result)})
