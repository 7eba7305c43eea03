"""Claims of one domain name by several projects: a pending claim blocks no one, the first to verify owns the name
("no squatting", docs/domains.md). Through HTTP against the loopback DNS server."""

import pytest
from django.db import IntegrityError, connection, transaction

from conftest import client_with, concurrently, make_persona
from domains.models import Domain
from domains.services import DomainClaimLost, domain_check, domain_create, domain_mark_verified_by_operator
from domains.tasks import domain_check_task
from domains.tests.test_api_domains import add_domain, publish


def names_of(client, persona) -> list[str]:
    return [d["domain"] for d in client.get(f"/domains/project/{persona.id}").json()]


def test_a_pending_claim_blocks_no_one_and_the_first_to_verify_owns_the_name(
    secret_client, other_client, project, other_project, dns_zone
):
    mine = add_domain(secret_client, "x.test")
    theirs = add_domain(other_client, "X.test.")  # 201: Alice's claim is only pending
    assert theirs["domain"] == mine["domain"] == "x.test" and theirs["status"] == "pending"
    assert theirs["dkimSelector"] != mine["dkimSelector"]
    assert theirs["records"][0]["value"] != mine["records"][0]["value"]  # each project its own DKIM key

    publish(dns_zone, theirs, "dkim")
    verified = other_client.get(f"/domains/{theirs['id']}/verify").json()
    assert verified["status"] == "verified" and verified["projectId"] == str(other_project.id)

    # Alice's pending claim is gone; adding it again is the same 409 as for a name she holds, naming no one.
    assert secret_client.get(f"/domains/{mine['id']}/verify").status_code == 404
    assert "x.test" not in names_of(secret_client, project)
    again = secret_client.post("/domains", {"domain": "x.test"}, format="json")
    assert again.status_code == 409
    error = again.json()["error"]
    assert (error["code"], error["message"]) == ("CONFLICT", 'Domain "x.test" is already registered')
    assert str(other_project.id) not in again.content.decode() and "Bob" not in again.content.decode()
    assert list(Domain.objects.filter(name="x.test").values_list("project_id", "status")) == [
        (other_project.id, "verified")
    ]


def test_publishing_the_other_projects_record_does_not_verify_a_claim(secret_client, other_client, dns_zone):
    mine = add_domain(secret_client, "x.test")
    theirs = add_domain(other_client, "x.test")
    publish(dns_zone, theirs, "dkim")
    assert secret_client.get(f"/domains/{mine['id']}/verify").json()["status"] == "pending"


def test_a_check_of_a_claim_removed_meanwhile_is_409_and_the_task_skips_it(project, other_project, dns_zone):
    mine = domain_create(project=project.project, name="x.test")
    theirs = domain_create(project=other_project.project, name="x.test")
    dns_zone[(f"{theirs.dkim_selector}._domainkey.x.test", "TXT")] = [f"v=DKIM1; p={theirs.dkim_public_key}"]
    domain_check(domain=theirs)

    with pytest.raises(DomainClaimLost) as raised:  # `mine` was loaded before Bob verified the name
        domain_check(domain=mine)
    assert (raised.value.status, str(raised.value)) == (409, 'Domain "x.test" is already registered')
    domain_check_task(str(mine.pk))  # nothing to check, no error
    assert not Domain.objects.filter(pk=mine.pk).exists()


def test_a_verified_domain_back_to_pending_releases_the_name(secret_client, other_client, project, dns_server):
    mine = add_domain(secret_client, "x.test")
    publish(dns_server.zone, mine, "dkim")
    assert secret_client.get(f"/domains/{mine['id']}/verify").json()["status"] == "verified"
    assert other_client.post("/domains", {"domain": "x.test"}, format="json").status_code == 409

    dns_server.zone.clear()
    for _ in range(3):
        released = secret_client.get(f"/domains/{mine['id']}/verify").json()
    assert released["status"] == "pending"

    theirs = add_domain(other_client, "x.test")
    publish(dns_server.zone, theirs, "dkim")
    assert other_client.get(f"/domains/{theirs['id']}/verify").json()["status"] == "verified"
    assert "x.test" not in names_of(secret_client, project)


def test_an_operator_vouching_removes_pending_claims_and_cannot_take_a_verified_name(project, other_project):
    pending = domain_create(project=project.project, name="x.test")
    vouched = domain_mark_verified_by_operator(project=other_project.project, name="x.test")
    assert vouched.is_verified and not Domain.objects.filter(pk=pending.pk).exists()
    with pytest.raises(IntegrityError), transaction.atomic():
        Domain.objects.create(project=project.project, name="x.test", status=Domain.Status.VERIFIED)
    with pytest.raises(Exception, match="already registered"):
        domain_mark_verified_by_operator(project=project.project, name="x.test")


def test_the_database_allows_one_verified_claim_per_name(project, other_project):
    domain_create(project=project.project, name="x.test")
    theirs = domain_create(project=other_project.project, name="x.test")
    Domain.objects.filter(name="x.test", project=project.project).update(status=Domain.Status.VERIFIED)
    with pytest.raises(IntegrityError), transaction.atomic():
        Domain.objects.filter(pk=theirs.pk).update(status=Domain.Status.VERIFIED)
    with pytest.raises(IntegrityError), transaction.atomic():
        Domain.objects.create(project=other_project.project, name="x.test")  # one claim per project


@pytest.mark.django_db(transaction=True)
def test_concurrent_verifications_and_claims_leave_one_owner(dns_zone):
    """Six projects verify their claims of one name at once while six more add it: exactly one verification wins,
    and no other claim of the name survives it (an add that lost the race is a 409)."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    personas = [make_persona(f"Shop {n}", f"owner{n}@example.test") for n in range(12)]
    clients = [client_with(persona.keys.secret_key) for persona in personas]
    claims = [add_domain(client, "race.test") for client in clients[:6]]
    for claim in claims:
        publish(dns_zone, claim, "dkim")

    def act(n):
        if n < 6:
            response = clients[n].get(f"/domains/{claims[n]['id']}/verify")
            return "verify", response.status_code, response.json().get("status")
        return "add", clients[n].post("/domains", {"domain": "race.test"}, format="json").status_code, None

    outcomes = concurrently(act, range(12), threads=12)
    verifications = [outcome for outcome in outcomes if outcome[0] == "verify"]
    assert [outcome for outcome in verifications if outcome[1] == 200] == [("verify", 200, "verified")]
    assert {code for _, code, _ in verifications} <= {200, 404, 409}
    assert {code for kind, code, _ in outcomes if kind == "add"} <= {201, 409}
    assert list(Domain.objects.filter(name="race.test").values_list("status", flat=True)) == ["verified"]
