from django.urls import path, re_path

from accounts.api import views

urlpatterns = [
    path("auth/signup", views.SignupView.as_view(), name="auth-signup"),
    path("auth/login", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout", views.LogoutView.as_view(), name="auth-logout"),
    path("auth/verify-email", views.VerifyEmailView.as_view(), name="auth-verify-email"),
    path("auth/request-verification", views.RequestVerificationView.as_view(), name="auth-request-verification"),
    path("auth/request-password-reset", views.RequestPasswordResetView.as_view(), name="auth-request-reset"),
    path("auth/reset-password", views.ResetPasswordView.as_view(), name="auth-reset-password"),
    path("auth/oauth-config", views.OAuthConfigView.as_view(), name="auth-oauth-config"),
    re_path(r"^oauth/(?P<provider>github|google)/outbound$", views.OAuthOutboundView.as_view(), name="oauth-outbound"),
    re_path(r"^oauth/(?P<provider>github|google)/callback$", views.OAuthCallbackView.as_view(), name="oauth-callback"),
    path("auth/accept-invitation", views.AcceptInvitationView.as_view(), name="auth-accept-invitation"),
    path("users/@me", views.MeView.as_view(), name="users-me"),
    path("users/@me/projects", views.ProjectsView.as_view(), name="users-me-projects"),
    path("users/@me/projects/<str:project_id>", views.ProjectView.as_view(), name="users-me-project"),
    path(
        "users/@me/projects/<str:project_id>/regenerate-keys",
        views.RegenerateKeysView.as_view(),
        name="users-me-project-regenerate-keys",
    ),
    path(
        "users/@me/projects/<str:project_id>/regenerate-webhook-secret",
        views.RegenerateWebhookSecretView.as_view(),
        name="users-me-project-regenerate-webhook-secret",
    ),
    path("users/@me/projects/<str:project_id>/reset", views.ResetView.as_view(), name="users-me-project-reset"),
    path("projects/<str:project_id>/members", views.MembersView.as_view(), name="project-members"),
    path(
        "projects/<str:project_id>/members/<str:user_id>",
        views.MemberView.as_view(method_hints={"GET": "The members: GET /projects/{projectId}/members"}),
        name="project-member",
    ),
    path("projects/<str:project_id>/invitations", views.InvitationsView.as_view(), name="project-invitations"),
    path(
        "projects/<str:project_id>/invitations/<str:invitation_id>",
        views.InvitationView.as_view(
            method_hints={"GET": "Pending invitations: GET /projects/{projectId}/invitations"}
        ),
        name="project-invitation",
    ),
    path("projects/<str:project_id>/setup-state", views.SetupStateView.as_view(), name="project-setup-state"),
]
