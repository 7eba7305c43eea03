"""List endpoints cost the same number of queries whatever the number of rows (no N+1)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from contacts.models import Contact
from segments.tests.test_api_segments import create


def queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_segment_list_and_members_page_do_not_grow_with_rows(secret_client, project):
    segment = create(secret_client).json()
    Contact.objects.create(project=project.project, email="a@example.test", data={"plan": "pro"})
    few_list, few_members = (
        queries(secret_client, "/segments"),
        queries(secret_client, f"/segments/{segment['id']}/contacts"),
    )
    for index in range(5):
        create(secret_client, name=f"S{index}")
        Contact.objects.create(project=project.project, email=f"c{index}@example.test", data={"plan": "pro"})
    assert queries(secret_client, "/segments") == few_list
    assert queries(secret_client, f"/segments/{segment['id']}/contacts") == few_members
