"""The account security endpoints: the reputation guard's figures for a project's members."""

import pytest

from accounts.tenancy.services import project_disable
from conftest import session_client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/projects/{id}/security", "/users/@me/projects/{id}/security"])
def test_security_shows_the_guards_state(project, path):
    client = session_client("alice@example.test")
    response = client.get(path.format(id=project.id))
    assert response.status_code == 200, response.content
    data = response.json()["data"]
    assert data["status"] == "healthy" and data["disabled"] is False and data["recentSuspensions"] == []
    assert (
        set(data["levels"])
        == set(data["rates"])
        == {"bounce7Day", "bounceAllTime", "complaint7Day", "complaintAllTime"}
    )
    assert data["rates"]["bounce7Day"] is None  # under 100 sent: no rate yet

    project_disable(project=project.project, reason="EMAIL_REPUTATION")
    data = client.get(path.format(id=project.id)).json()["data"]
    assert data["disabled"] is True and data["disabledReason"] == "EMAIL_REPUTATION"
    assert data["recentSuspensions"][0]["reason"] == "EMAIL_REPUTATION"
    assert data["recentSuspensions"][0]["resolvedAt"] is None


@pytest.mark.parametrize("path", ["/projects/{id}/security", "/users/@me/projects/{id}/security"])
def test_security_of_another_project_is_access_denied(project, other_project, path):
    response = session_client("alice@example.test").get(path.format(id=other_project.id))
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_ACCESS_DENIED"
