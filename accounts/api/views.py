"""Account endpoints: sign-up and the browser session (`/auth/*`), the user's projects (`/users/@me/projects`), and
members, invitations and setup state (`/projects/:id/*`). docs/accounts.md explains them for a dashboard."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user, logout
from django.http import HttpResponseRedirect
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from accounts.api import serializers as s
from accounts.http.authentication import session_open
from accounts.http.views import AccountView, MemberProjectView, PublicApiView
from accounts.identity import invitations, oauth, users
from accounts.models import Membership
from accounts.tenancy import members, registry, selectors, services
from core.errors import ServiceError
from core.http.schema import ERROR_RESPONSE as ERROR
from core.http.validation import validate

Role = Membership.Role


def _envelope(name: str, data) -> serializers.Serializer:
    return inline_serializer(name, {"success": serializers.BooleanField(), "data": data})


USER_ENVELOPE = _envelope("UserEnvelope", inline_serializer("UserData", {"user": s.UserOutputSerializer()}))


def _user_answer(user, status: int = 200) -> Response:
    return Response({"success": True, "data": {"user": s.UserOutputSerializer(user).data}}, status=status)


class SignupView(PublicApiView):
    @extend_schema(
        operation_id="auth_signup",
        request=s.SignupInputSerializer,
        responses={201: USER_ENVELOPE, 403: ERROR, 409: ERROR},
    )
    def post(self, request):
        values = validate(s.SignupInputSerializer, request.data)
        user = users.user_signup(
            email=values["email"], password=values["password"], invitation_token=values.get("token") or None
        )
        session_open(request._request, user)
        return _user_answer(user, status=201)


class LoginView(PublicApiView):
    @extend_schema(
        operation_id="auth_login", request=s.CredentialsInputSerializer, responses={200: USER_ENVELOPE, 401: ERROR}
    )
    def post(self, request):
        values = validate(s.CredentialsInputSerializer, request.data)
        user = users.user_authenticate(email=values["email"], password=values["password"])
        session_open(request._request, user)
        users.user_login_recorded(user=user)
        return _user_answer(user)


class LogoutView(PublicApiView):
    @extend_schema(operation_id="auth_logout", request=None, responses={200: s.SuccessSerializer})
    def get(self, request):
        # Deletes the session on the server: a copy of the cookie is worthless from here on. Django's logout tells
        # the receivers of `user_logged_out` whom it logged out (the session cache forgets their access): this view
        # authenticates no one, so the session's user is named first.
        request._request.user = get_user(request._request)
        logout(request._request)
        return Response({"success": True})

    @extend_schema(operation_id="auth_logout_post", request=None, responses={200: s.SuccessSerializer})
    def post(self, request):
        return self.get(request)


class VerifyEmailView(PublicApiView):
    @extend_schema(operation_id="auth_verify_email", request=s.TokenInputSerializer, responses={200: USER_ENVELOPE})
    def post(self, request):
        values = validate(s.TokenInputSerializer, request.data)
        return _user_answer(users.user_verify_email(token=values["token"]))


class RequestVerificationView(PublicApiView):
    @extend_schema(
        operation_id="auth_request_verification", request=s.EmailInputSerializer, responses={200: s.SuccessSerializer}
    )
    def post(self, request):
        values = validate(s.EmailInputSerializer, request.data)
        users.user_request_verification(email=values["email"])
        return Response({"success": True})


class RequestPasswordResetView(PublicApiView):
    @extend_schema(
        operation_id="auth_request_password_reset",
        request=s.EmailInputSerializer,
        responses={200: s.SuccessSerializer},
    )
    def post(self, request):
        values = validate(s.EmailInputSerializer, request.data)
        users.user_request_password_reset(email=values["email"])
        return Response({"success": True})


class ResetPasswordView(PublicApiView):
    @extend_schema(
        operation_id="auth_reset_password", request=s.ResetPasswordInputSerializer, responses={200: s.SuccessSerializer}
    )
    def post(self, request):
        values = validate(s.ResetPasswordInputSerializer, request.data)
        users.user_reset_password(token=values["token"], password=values["password"])
        return Response({"success": True})


class OAuthConfigView(PublicApiView):
    @extend_schema(operation_id="auth_oauth_config", responses={200: s.OAuthConfigSerializer})
    def get(self, request):
        return Response({name: {"enabled": enabled} for name, enabled in oauth.oauth_providers().items()})


class OAuthOutboundView(PublicApiView):
    """The dashboard's "Sign in with ..." link: a redirect to the provider (404 when it is not configured)."""

    @extend_schema(operation_id="oauth_outbound", responses={302: None, 404: ERROR})
    def get(self, request, provider):
        return HttpResponseRedirect(oauth.oauth_start(provider=provider, session=request.session))


class OAuthCallbackView(PublicApiView):
    """Where the provider sends the browser back: logged in and on to the dashboard, or to the dashboard's login page
    with `error=<code>&message=<text>` (a browser is on this page, not a script that could read an error body)."""

    @extend_schema(operation_id="oauth_callback", responses={302: None})
    def get(self, request, provider):
        try:
            user = oauth.oauth_finish(provider=provider, session=request.session, params=request.query_params)
        except ServiceError as exc:
            query = urlencode({"error": exc.code, "message": exc.message})
            return HttpResponseRedirect(f"{settings.DASHBOARD_URL}/auth/login?{query}")
        session_open(request._request, user)
        return HttpResponseRedirect(settings.DASHBOARD_URL)


class AcceptInvitationView(AccountView):
    @extend_schema(
        operation_id="auth_accept_invitation",
        request=s.TokenInputSerializer,
        responses={200: _envelope("AcceptedInvitation", s.ProjectOutputSerializer())},
    )
    def post(self, request):
        values = validate(s.TokenInputSerializer, request.data)
        project = invitations.invitation_accept(user=request.user, token=values["token"])
        membership = selectors.membership_get(user=request.user, project_id=project.id)
        return Response({"success": True, "data": s.ProjectOutputSerializer(selectors.project_row(membership)).data})


class MeView(AccountView):
    @extend_schema(operation_id="users_me", responses={200: s.UserOutputSerializer})
    def get(self, request):
        return Response(s.UserOutputSerializer(request.user).data)


class ProjectsView(AccountView):
    @extend_schema(
        operation_id="users_me_projects_list",
        responses={200: _envelope("ProjectList", s.ProjectOutputSerializer(many=True))},
    )
    def get(self, request):
        rows = selectors.project_rows_of(user=request.user)
        return Response({"success": True, "data": s.ProjectOutputSerializer(rows, many=True).data})

    @extend_schema(
        operation_id="users_me_projects_create",
        request=s.ProjectCreateInputSerializer,
        responses={201: _envelope("ProjectCreated", s.ProjectCreatedOutputSerializer())},
    )
    def post(self, request):
        values = validate(s.ProjectCreateInputSerializer, request.data)
        project, keys = services.project_create(name=values["name"], owner=request.user)
        membership = selectors.membership_get(user=request.user, project_id=project.id)
        row = selectors.project_row(
            membership,
            webhook_secret=services.project_webhook_secret(project=project),
            secret_key=keys.secret_key,
        )
        return Response({"success": True, "data": s.ProjectCreatedOutputSerializer(row).data}, status=201)


def _detail(membership: Membership) -> dict:
    project = membership.project
    sees_secret = membership.role in (Role.ADMIN, Role.OWNER)
    row = selectors.project_row(
        membership,
        registry.default_sender_domains([project.id]).get(project.id),
        webhook_secret=services.project_webhook_secret(project=project) if sees_secret else None,
    )
    return {"success": True, "data": s.ProjectDetailOutputSerializer(row).data}


PROJECT_DETAIL = _envelope("ProjectDetail", s.ProjectDetailOutputSerializer())


class ProjectView(MemberProjectView):
    roles = {"PATCH": Role.ADMIN, "DELETE": Role.OWNER}

    @extend_schema(operation_id="users_me_projects_get", responses={200: PROJECT_DETAIL, 403: ERROR})
    def get(self, request, project_id):
        return Response(_detail(self.membership))

    @extend_schema(
        operation_id="users_me_projects_update",
        request=s.ProjectUpdateInputSerializer,
        responses={200: PROJECT_DETAIL, 403: ERROR},
    )
    def patch(self, request, project_id):
        values = validate(s.ProjectUpdateInputSerializer, request.data)
        services.project_update(project=self.project, values=values)
        return Response(_detail(self.membership))

    @extend_schema(operation_id="users_me_projects_delete", responses={204: None, 403: ERROR})
    def delete(self, request, project_id):
        services.project_delete(project=self.project)
        return Response(status=204)


class RegenerateKeysView(MemberProjectView):
    roles = {"POST": Role.ADMIN}

    @extend_schema(
        operation_id="users_me_projects_regenerate_keys",
        request=None,
        responses={200: _envelope("RegeneratedKeys", s.KeysOutputSerializer()), 403: ERROR},
    )
    def post(self, request, project_id):
        keys = services.project_regenerate_keys(project=self.project)
        return Response({"success": True, "data": s.KeysOutputSerializer(keys).data})


class RegenerateWebhookSecretView(MemberProjectView):
    roles = {"POST": Role.ADMIN}

    @extend_schema(
        operation_id="users_me_projects_regenerate_webhook_secret",
        request=None,
        responses={
            200: _envelope(
                "RegeneratedWebhookSecret",
                inline_serializer("WebhookSecret", {"webhookSecret": serializers.CharField()}),
            ),
            403: ERROR,
        },
    )
    def post(self, request, project_id):
        secret = services.project_regenerate_webhook_secret(project=self.project)
        return Response({"success": True, "data": {"webhookSecret": secret}})


class ResetView(MemberProjectView):
    roles = {"POST": Role.OWNER}

    @extend_schema(
        operation_id="users_me_projects_reset",
        request=None,
        responses={
            202: inline_serializer(
                "ProjectResetQueued", {"jobId": serializers.UUIDField(), "message": serializers.CharField()}
            ),
            403: ERROR,
        },
    )
    def post(self, request, project_id):
        job = services.project_reset_start(project=self.project)
        return Response({"jobId": str(job.id), "message": "Project reset queued"}, status=202)


class MembersView(MemberProjectView):
    @extend_schema(
        operation_id="projects_members_list",
        responses={200: _envelope("MemberList", s.MemberOutputSerializer(many=True)), 403: ERROR},
    )
    def get(self, request, project_id):
        rows = members.members_list(project=self.project)
        return Response({"success": True, "data": s.MemberOutputSerializer(rows, many=True).data})

    @extend_schema(
        operation_id="projects_members_add",
        request=s.MemberInputSerializer,
        responses={201: _envelope("MemberAdded", s.MemberAddedOutputSerializer()), 403: ERROR, 409: ERROR},
    )
    def post(self, request, project_id):
        values = validate(s.MemberInputSerializer, request.data)
        row = members.member_add(actor=self.membership, email=values["email"], role=values["role"])
        return Response({"success": True, "data": s.MemberAddedOutputSerializer(row).data}, status=201)


class MemberView(MemberProjectView):
    @extend_schema(
        operation_id="projects_members_update",
        request=s.MemberUpdateInputSerializer,
        responses={200: _envelope("MemberUpdated", s.MemberOutputSerializer()), 403: ERROR, 404: ERROR},
    )
    def patch(self, request, project_id, user_id):
        values = validate(s.MemberUpdateInputSerializer, request.data)
        membership = members.member_update(actor=self.membership, user_id=user_id, role=values["role"])
        return Response({"success": True, "data": s.MemberOutputSerializer(members.member_row(membership)).data})

    @extend_schema(operation_id="projects_members_remove", responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request, project_id, user_id):
        members.member_remove(actor=self.membership, user_id=user_id)
        return Response(status=204)


class InvitationsView(MemberProjectView):
    @extend_schema(
        operation_id="projects_invitations_list",
        responses={200: _envelope("InvitationList", s.InvitationOutputSerializer(many=True)), 403: ERROR},
    )
    def get(self, request, project_id):
        rows = invitations.invitations_pending(project=self.project)
        return Response({"success": True, "data": s.InvitationOutputSerializer(rows, many=True).data})


class InvitationView(MemberProjectView):
    roles = {"DELETE": Role.ADMIN}

    @extend_schema(operation_id="projects_invitations_withdraw", responses={204: None, 403: ERROR, 404: ERROR})
    def delete(self, request, project_id, invitation_id):
        invitations.invitation_withdraw(project=self.project, invitation_id=invitation_id)
        return Response(status=204)


class SetupStateView(MemberProjectView):
    @extend_schema(
        operation_id="projects_setup_state",
        responses={200: _envelope("SetupStateEnvelope", s.SetupStateSerializer()), 403: ERROR},
    )
    def get(self, request, project_id):
        return Response({"success": True, "data": registry.project_setup_facts(self.project)})
