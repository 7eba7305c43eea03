"""`check_domains`: the DNS checks now, against the loopback DNS server, each record's state printed."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from domains.models import Domain
from domains.services import domain_create

pytestmark = pytest.mark.django_db


def check(*args) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("check_domains", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue()
    return 0, out.getvalue()


def publish(zone, domain: Domain) -> None:
    zone[(f"{domain.dkim_selector}._domainkey.{domain.name}", "TXT")] = [f"v=DKIM1; k=rsa; p={domain.dkim_public_key}"]


def test_pending_domains_are_checked_and_verified_once_published(project, other_project, dns_zone):
    published = domain_create(project=project.project, name="published.example")
    waiting = domain_create(project=project.project, name="waiting.example")
    theirs = domain_create(project=other_project.project, name="theirs.example")
    publish(dns_zone, published)
    publish(dns_zone, theirs)
    dns_zone[("_dmarc.published.example", "TXT")] = ["v=DMARC1; p=none"]

    status, out = check("--project", str(project.id), "--dry-run", "--json")
    report = {entry["domain"]: entry for entry in json.loads(out)}
    assert status == 2 and set(report) == {"published.example", "waiting.example"}
    assert {r["purpose"]: r["status"] for r in report["published.example"]["records"]} == {
        "dkim": "valid",
        "dmarc": "valid",
    }
    assert Domain.objects.get(pk=published.pk).status == "pending"  # a dry run stores nothing

    status, out = check("--project", str(project.id))
    assert status == 2  # waiting.example has published nothing
    assert "published.example" in out and "waiting.example" in out and "theirs.example" not in out
    assert "dkim" in out and "No TXT record found" in out
    assert Domain.objects.get(pk=published.pk).status == "verified"
    assert Domain.objects.get(pk=theirs.pk).status == "pending"  # another project's

    status, out = check("--project", str(project.id), "--domain", "published.example", "--json")
    entry = json.loads(out)[0]
    assert status == 0 and entry["status"] == "verified"
    assert entry["records"][0] == {**entry["records"][0], "purpose": "dkim", "status": "valid", "required": True}
    assert Domain.objects.get(pk=waiting.pk).status == "pending"


def test_all_includes_verified_domains_and_the_second_run_agrees(project, dns_zone):
    domain = domain_create(project=project.project, name="ok.example")
    publish(dns_zone, domain)
    assert check("--project", str(project.id), "--all", "--json")[0] == 0  # alice.test is vouched for by operator
    first = json.loads(check("--project", str(project.id), "--all", "--json")[1])
    second = json.loads(check("--project", str(project.id), "--all", "--json")[1])
    assert {e["domain"]: e["status"] for e in first} == {"alice.test": "verified", "ok.example": "verified"}
    assert first == second
    assert {e["domain"]: e["verifiedBy"] for e in first} == {"alice.test": "operator", "ok.example": "dns"}
    # In words: why a domain whose DKIM record is missing still counts as verified.
    text = check("--project", str(project.id), "--all")[1]
    assert "alice.test" in text and "dkim" in text and "invalid (required)" in text
    assert "verified by an operator: its records are checked, but one missing never demotes it" in text


def test_no_pending_domain_is_nothing_to_do(project, dns_server):
    assert check("--project", str(project.id)) == (0, "No domain to check\n")


def test_unknown_domain_and_project(project, other_project, dns_server):
    domain_create(project=other_project.project, name="bobs.example")
    with pytest.raises(CommandError, match=r'Domain "bobs\.example" not found'):
        call_command("check_domains", "--domain", "bobs.example", "--project", str(project.id))
    with pytest.raises(CommandError, match=r'^Project "x" not found$'):
        call_command("check_domains", "--project", "x")
