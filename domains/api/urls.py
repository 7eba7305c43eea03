from django.urls import path

from domains.api.views import DomainViewSet, VerifyView

domains = DomainViewSet.as_view
LIST = {"GET": "A project's domains, verified and pending: GET /domains/project/{projectId}"}

urlpatterns = [
    path("v1/verify", VerifyView.as_view(), name="v1-verify"),
    path("domains", domains({"post": "create"}, method_hints=LIST), name="domain-list"),
    path("domains/project/<str:project_id>", domains({"get": "of_project"}), name="domain-project"),
    path("domains/<str:pk>/verify", domains({"get": "verify"}), name="domain-verify"),
    path("domains/<str:pk>", domains({"delete": "destroy"}, method_hints=LIST), name="domain-detail"),
]
