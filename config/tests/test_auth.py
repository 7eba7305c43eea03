import pytest

from accounts.models import Job
from accounts.tenancy.services import project_disable, project_regenerate_keys
from conftest import client_with

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


def _error(response):
    body = response.json()
    assert body["success"] is False
    assert body["error"]["statusCode"] == response.status_code
    assert body["error"]["requestId"] == response["X-Request-Id"]
    return body["error"]


@pytest.mark.parametrize(
    ("header", "status", "code"),
    [
        (None, 401, "MISSING_AUTH"),
        ("", 401, "MISSING_AUTH"),
        ("Bearer", 401, "MISSING_AUTH"),
        ("Basic dXNlcjpwYXNz", 401, "MISSING_AUTH"),
        ("Bearer garbage", 401, "UNAUTHORIZED"),
        ("Bearer sk_" + "0" * 64, 401, "UNAUTHORIZED"),
        ("Bearer pk_" + "0" * 64, 401, "UNAUTHORIZED"),
    ],
)
def test_bad_authorization_headers_are_rejected_without_writing(project, anon_client, header, status, code):
    extra = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = anon_client.post("/probe/write", {"name": "x"}, format="json", **extra)
    assert response.status_code == status
    assert _error(response)["code"] == code
    assert Job.objects.count() == 0


def test_secret_key_authenticates_and_identifies_the_project(project, secret_client):
    response = secret_client.get("/probe/secret")
    assert response.status_code == 200
    assert response.json() == {"project": str(project.id)}


def test_public_key_on_a_secret_endpoint_names_the_key_required(project, public_client):
    response = public_client.post("/probe/write", {"name": "x"}, format="json")
    assert response.status_code == 401
    error = _error(response)
    assert error["code"] == "INVALID_API_KEY"
    assert "secret key" in error["message"]
    assert Job.objects.count() == 0


def test_secret_key_on_the_public_endpoint_names_the_key_required(project, secret_client, public_client):
    response = secret_client.post("/probe/public", {}, format="json")
    assert response.status_code == 401
    error = _error(response)
    assert error["code"] == "INVALID_API_KEY"
    assert "public key" in error["message"]
    assert public_client.post("/probe/public", {}, format="json").status_code == 200


def test_disabled_project_is_refused_with_both_keys(project, secret_client, public_client):
    project_disable(project=project.project, reason="EMAIL_REPUTATION")
    for response in (secret_client.get("/probe/secret"), public_client.post("/probe/public", {}, format="json")):
        assert response.status_code == 403
        error = _error(response)
        assert error["code"] == "PROJECT_DISABLED"
        assert "EMAIL_REPUTATION" in error["message"]


def test_regenerated_keys_replace_the_old_ones_at_once(project, secret_client, public_client):
    new_keys = project_regenerate_keys(project=project.project)
    assert _error(secret_client.get("/probe/secret"))["code"] == "UNAUTHORIZED"
    assert _error(public_client.post("/probe/public", {}, format="json"))["code"] == "UNAUTHORIZED"
    assert client_with(new_keys.secret_key).get("/probe/secret").status_code == 200
    assert client_with(new_keys.public_key).post("/probe/public", {}, format="json").status_code == 200


def test_another_projects_resource_is_a_404_not_a_leak(project, other_project, secret_client, other_client):
    job = Job.objects.create(project=project.project, type="import")
    assert secret_client.get(f"/probe/jobs/{job.id}").status_code == 200
    response = other_client.get(f"/probe/jobs/{job.id}")
    assert response.status_code == 404
    error = _error(response)
    assert error["code"] == "JOB_NOT_FOUND"
    assert error["message"] == f'Job with ID "{job.id}" was not found'
    assert error["details"] == {"resource": "Job", "id": str(job.id)}
    assert other_client.get("/probe/jobs").json()["data"] == []


def test_malformed_resource_id_is_a_404(secret_client):
    response = secret_client.get("/probe/jobs/not-a-uuid")
    assert response.status_code == 404
    assert _error(response)["code"] == "JOB_NOT_FOUND"


def test_scoped_viewsets_cannot_override_the_project_filter():
    from accounts.http.views import ProjectScopedViewSet

    with pytest.raises(TypeError, match="get_queryset"):

        class Leaky(ProjectScopedViewSet):
            def get_queryset(self):
                return Job.objects.all()
