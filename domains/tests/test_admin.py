from domains.models import Domain
from domains.services import domain_create


def test_change_page_shows_records_and_results(admin_client, project, dns_zone):
    domain = domain_create(project=project.project, name="shown.example")
    page = admin_client.get(f"/admin/domains/domain/{domain.pk}/change/")
    assert page.status_code == 200
    assert f"{domain.dkim_selector}._domainkey.shown.example" in page.content.decode()
    assert admin_client.get("/admin/domains/domain/").status_code == 200


def test_check_now_action_runs_the_check(admin_client, project, dns_zone):
    domain = domain_create(project=project.project, name="act.example")
    dns_zone[(f"{domain.dkim_selector}._domainkey.act.example", "TXT")] = [f"v=DKIM1; p={domain.dkim_public_key}"]
    response = admin_client.post(
        "/admin/domains/domain/", {"action": "check_now", "_selected_action": [str(domain.pk)]}, follow=True
    )
    assert response.status_code == 200
    domain.refresh_from_db()
    assert (domain.status, domain.verification_method) == ("verified", "dns")


def test_mark_verified_action_records_the_operator(admin_client, project):
    domain = domain_create(project=project.project, name="vouched.example")
    admin_client.post("/admin/domains/domain/", {"action": "mark_verified", "_selected_action": [str(domain.pk)]})
    domain.refresh_from_db()
    assert (domain.status, domain.verification_method) == ("verified", "operator")
    assert domain.verified_at is not None


def test_adding_in_the_admin_marks_verified_by_operator(admin_client, project):
    response = admin_client.post("/admin/domains/domain/add/", {"name": "added.example", "project": str(project.id)})
    assert response.status_code == 302, response.content.decode()[:2000]
    domain = Domain.objects.get(name="added.example")
    assert (domain.status, domain.verification_method, domain.project_id) == ("verified", "operator", project.id)


def test_adding_a_name_another_project_verified_is_a_form_error(admin_client, project, other_project):
    response = admin_client.post("/admin/domains/domain/add/", {"name": "Bob.test", "project": str(project.id)})
    assert response.status_code == 200
    assert "Another project has verified this domain" in response.content.decode()
    assert list(Domain.objects.filter(name="bob.test").values_list("project_id", flat=True)) == [other_project.id]


def test_change_page_shows_the_other_claims_and_vouching_for_one_removes_them(admin_client, project, other_project):
    mine = domain_create(project=project.project, name="x.example")
    theirs = domain_create(project=other_project.project, name="x.example")
    page = admin_client.get(f"/admin/domains/domain/{mine.pk}/change/").content.decode()
    assert "Bob&#x27;s shop (pending)" in page

    # Both selected: the first vouched for owns the name, the other is refused with a message, not an error page.
    response = admin_client.post(
        "/admin/domains/domain/",
        {"action": "mark_verified", "_selected_action": [str(theirs.pk), str(mine.pk)]},
        follow=True,
    )
    assert response.status_code == 200
    assert "another project has verified it" in response.content.decode()
    assert list(Domain.objects.filter(name="x.example").values_list("status", flat=True)) == ["verified"]
