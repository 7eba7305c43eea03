"""The account security endpoints: the reputation guard's view of a project, for its members."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from accounts.http.views import MemberProjectView
from core.http.schema import ERROR_RESPONSE as ERROR
from messaging.feedback.reputation import project_security

_RATES = {
    name: serializers.FloatField(allow_null=True)
    for name in ("bounce7Day", "bounceAllTime", "complaint7Day", "complaintAllTime")
}
# healthy, warning or critical (plain strings: one enum per name would crowd the schema's components).
_LEVELS = {name: serializers.CharField() for name in _RATES}

SECURITY = inline_serializer(
    "ProjectSecurityEnvelope",
    {
        "success": serializers.BooleanField(),
        "data": inline_serializer(
            "ProjectSecurity",
            {
                "status": serializers.CharField(help_text="healthy, warning or critical"),
                "disabled": serializers.BooleanField(),
                "disabledReason": serializers.CharField(allow_null=True),
                "levels": inline_serializer("SecurityLevels", _LEVELS),
                "rates": inline_serializer("SecurityRates", _RATES),
                "counts": serializers.DictField(child=serializers.IntegerField()),
                "recentSuspensions": inline_serializer(
                    "Suspension",
                    {
                        "reason": serializers.CharField(allow_null=True),
                        "at": serializers.CharField(allow_null=True),
                        "resolvedAt": serializers.CharField(allow_null=True),
                    },
                    many=True,
                ),
            },
        ),
    },
)


class ProjectSecurityView(MemberProjectView):
    @extend_schema(operation_id="project_security", responses={200: SECURITY, 403: ERROR})
    def get(self, request, project_id):
        return Response({"success": True, "data": project_security(project=self.project)})


class UserProjectSecurityView(ProjectSecurityView):
    @extend_schema(operation_id="users_me_project_security", responses={200: SECURITY, 403: ERROR})
    def get(self, request, project_id):
        return super().get(request, project_id)
