"""Domains endpoints through HTTP, against the loopback DNS server."""

import time

import pytest
from django.test import override_settings

from core.usage import usage_finders
from domains.models import Domain
from domains.services import domain_check


def add_domain(client, name="example.com"):
    response = client.post("/domains", {"domain": name}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def record(body, purpose):
    return next(r for r in body["records"] if r["purpose"] == purpose)


def publish(zone, body, *purposes):
    for purpose in purposes:
        r = record(body, purpose)
        zone[(r["name"], r["type"])] = [r["value"]]


SPF = {"DOMAINS_SPF_INCLUDES": ["_spf.herald.example"], "DOMAINS_SPF_IP_ADDRESSES": ["192.0.2.10"]}


@override_settings(**SPF, DOMAINS_RETURN_PATH_HOST="bounces.herald.example")
def test_create_returns_the_records_to_publish(secret_client, project):
    body = add_domain(secret_client, "Example.COM.")

    domain = Domain.objects.get(pk=body["id"])
    assert body["domain"] == "example.com"
    assert body["status"] == "pending" and body["verified"] is False
    assert body["projectId"] == str(project.id)
    assert body["dkimSelector"] == domain.dkim_selector and domain.dkim_selector.startswith("herald-")
    assert body["lastCheckedAt"] is None and body["verifiedAt"] is None
    assert body["createdAt"].endswith("Z") and len(body["createdAt"]) == 24
    assert [(r["purpose"], r["type"], r["name"], r["required"], r["status"]) for r in body["records"]] == [
        ("dkim", "TXT", f"{domain.dkim_selector}._domainkey.example.com", True, "pending"),
        ("spf", "TXT", "example.com", False, "pending"),
        ("dmarc", "TXT", "_dmarc.example.com", False, "pending"),
        ("return_path", "CNAME", "bounces.example.com", False, "pending"),
    ]
    assert record(body, "dkim")["value"] == f"v=DKIM1; k=rsa; p={domain.dkim_public_key}"
    assert record(body, "spf")["value"] == "v=spf1 include:_spf.herald.example ip4:192.0.2.10 ~all"
    assert record(body, "dmarc")["value"] == "v=DMARC1; p=none"
    assert record(body, "return_path")["value"] == "bounces.herald.example"
    assert set(body) == {
        "id", "domain", "status", "verified", "records", "dkimSelector", "lastCheckedAt", "verifiedAt",
        "projectId", "createdAt", "updatedAt",
    }  # fmt: skip
    # The private key is encrypted at rest and never in the API.
    assert "PRIVATE" not in domain.dkim_private_key_encrypted
    assert domain.dkim_private_key_encrypted not in str(body)


def test_unconfigured_spf_and_return_path_are_not_suggested(secret_client):
    body = add_domain(secret_client)
    assert [r["purpose"] for r in body["records"]] == ["dkim", "dmarc"]


def test_idna_names_are_stored_encoded(secret_client):
    assert add_domain(secret_client, "Bücher.example")["domain"] == "xn--bcher-kva.example"


@pytest.mark.parametrize(
    "value",
    ["exa mple.com", "-bad-.com", "com", "a" * 250 + ".com", "192.168.1.1", "[::1]", "", "not_a_domain!.com"],
)
def test_create_refuses_invalid_domains(secret_client, value):
    response = secret_client.post("/domains", {"domain": value}, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "VALIDATION_ERROR"
    assert response.json()["error"]["errors"][0]["field"] == "domain"
    assert not Domain.objects.exclude(name="alice.test").filter(project__name="Alice's shop").exists()


@pytest.mark.parametrize("body", [{}, {"domain": 42}, {"domain": None}, {"domain": ["example.com"]}])
def test_create_refuses_bad_types(secret_client, body):
    response = secret_client.post("/domains", body, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["errors"][0]["field"] == "domain"


def test_same_domain_twice_is_409(secret_client):
    add_domain(secret_client)
    response = secret_client.post("/domains", {"domain": "EXAMPLE.com"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CONFLICT"


def test_domain_another_project_verified_is_409_without_saying_whose(secret_client, other_client, other_project):
    add_domain(secret_client, "mine.example")
    mine = secret_client.post("/domains", {"domain": "mine.example"}, format="json")
    theirs = secret_client.post("/domains", {"domain": "bob.test"}, format="json")  # verified by Bob's shop
    assert theirs.status_code == mine.status_code == 409
    assert theirs.json()["error"]["message"] == 'Domain "bob.test" is already registered'
    assert mine.json()["error"]["message"] == 'Domain "mine.example" is already registered'
    assert str(other_project.id) not in str(theirs.json()) and "Bob" not in str(theirs.json())


def test_project_id_in_body_must_be_the_callers(secret_client, project, other_project):
    response = secret_client.post(
        "/domains", {"domain": "x.example", "projectId": str(other_project.id)}, format="json"
    )
    assert response.status_code == 403
    ok = secret_client.post("/domains", {"domain": "x.example", "projectId": str(project.id)}, format="json")
    assert ok.status_code == 201


def test_list_of_project(secret_client, project, django_assert_max_num_queries):
    add_domain(secret_client, "one.example")
    add_domain(secret_client, "two.example")
    secret_client.get(f"/domains/project/{project.id}")  # gives alice.test its key on first use
    with django_assert_max_num_queries(4):
        response = secret_client.get(f"/domains/project/{project.id}")
    assert response.status_code == 200
    assert [d["domain"] for d in response.json()] == ["two.example", "one.example", "alice.test"]
    alice = response.json()[2]
    assert alice["status"] == "verified" and alice["verified"] is True and alice["verifiedAt"]


@pytest.mark.parametrize("path", ["/domains/project/{other}", "/domains/project/not-a-uuid"])
def test_list_of_other_project_is_404(secret_client, other_project, path):
    response = secret_client.get(path.format(other=other_project.id))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "PROJECT_NOT_FOUND"


@pytest.mark.parametrize(("method", "suffix"), [("get", "/verify"), ("delete", "")])
def test_other_project_gets_404_for_this_projects_domain(secret_client, other_client, dns_server, method, suffix):
    body = add_domain(secret_client)
    response = getattr(other_client, method)(f"/domains/{body['id']}{suffix}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "DOMAIN_NOT_FOUND"
    assert response.json()["error"]["message"] == f'Domain with ID "{body["id"]}" was not found'
    assert Domain.objects.filter(pk=body["id"]).exists()


@pytest.mark.parametrize("pk", ["not-a-uuid", "6b0c1d1e-8f57-4d0b-9d39-4c3c5d6c8f00"])
def test_unknown_domain_is_404(secret_client, pk):
    assert secret_client.get(f"/domains/{pk}/verify").status_code == 404
    assert secret_client.delete(f"/domains/{pk}").status_code == 404


def test_endpoints_need_the_secret_key(public_client, anon_client, project):
    assert anon_client.post("/domains", {"domain": "x.example"}, format="json").status_code == 401
    response = public_client.get(f"/domains/project/{project.id}")
    assert response.status_code == 401 and response.json()["error"]["code"] == "INVALID_API_KEY"


@override_settings(**SPF)
def test_pending_to_verified_when_records_are_published(secret_client, dns_zone):
    body = add_domain(secret_client)

    first = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert first["status"] == "pending" and first["lastCheckedAt"]
    assert record(first, "dkim")["status"] == "invalid"
    assert record(first, "dkim")["lastError"] == f"No TXT record found at {record(first, 'dkim')['name']}"

    publish(dns_zone, body, "dkim")
    second = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert second["status"] == "verified" and second["verified"] is True and second["verifiedAt"]
    assert record(second, "dkim") | {"value": None} == record(second, "dkim") | {
        "status": "valid",
        "lastError": None,
        "value": None,
    }
    # SPF and DMARC are reported, not required.
    assert record(second, "spf")["status"] == "invalid"
    assert record(second, "dmarc")["status"] == "invalid"

    dns_zone[("example.com", "TXT")] = ["v=spf1 include:_spf.herald.example ip4:192.0.2.10 -all", "google-site=x"]
    dns_zone[("_dmarc.example.com", "TXT")] = ["v=DMARC1; p=quarantine"]
    third = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert [r["status"] for r in third["records"]] == ["valid", "valid", "valid"]
    assert Domain.objects.get(pk=body["id"]).verification_method == "dns"


@override_settings(**SPF)
@pytest.mark.parametrize(
    ("txt", "error"),
    [
        (["v=spf1 include:_spf.herald.example ~all"], "The SPF record at example.com lacks ip4:192.0.2.10"),
        (["v=spf1 a ~all", "v=spf1 mx ~all"], "More than one SPF record at example.com; merge them into one"),
        (["something else"], "No SPF record (v=spf1) found at example.com"),
    ],
)
def test_spf_problems_are_reported(secret_client, dns_zone, txt, error):
    body = add_domain(secret_client)
    dns_zone[("example.com", "TXT")] = txt
    checked = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert (record(checked, "spf")["status"], record(checked, "spf")["lastError"]) == ("invalid", error)


def test_wrong_dkim_key_does_not_verify(secret_client, dns_zone):
    body = add_domain(secret_client)
    name = record(body, "dkim")["name"]
    dns_zone[(name, "TXT")] = ["v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong"]
    checked = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert checked["status"] == "pending"
    assert (
        record(checked, "dkim")["lastError"] == f"The TXT record at {name} does not carry this domain's DKIM public key"
    )


@override_settings(**SPF, DOMAINS_RETURN_PATH_HOST="bounces.herald.example")
def test_timeout_keeps_records_pending_with_the_reason(secret_client, silent_dns, settings):
    settings.DNS_TIMEOUT_SECONDS = 0.5
    body = add_domain(secret_client)
    started = time.monotonic()
    response = secret_client.get(f"/domains/{body['id']}/verify")
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert [(r["status"], r["lastError"]) for r in response.json()["records"]] == [
        ("pending", f"DNS lookup of {r['name']} timed out") for r in body["records"]
    ]
    assert response.json()["status"] == "pending"
    assert elapsed < 1.5  # four lookups side by side: one timeout, not four


def test_servfail_keeps_records_pending(secret_client, dns_server):
    body = add_domain(secret_client)
    dns_server.mode = "servfail"
    dkim = record(secret_client.get(f"/domains/{body['id']}/verify").json(), "dkim")
    assert dkim["status"] == "pending" and "SERVFAIL" in dkim["lastError"]


def test_verified_domain_goes_back_to_pending_after_three_dkim_misses(secret_client, dns_server):
    body = add_domain(secret_client)
    publish(dns_server.zone, body, "dkim")
    assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"

    dns_server.zone.clear()
    assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"
    dns_server.mode = "silent"  # a timeout is not a miss: it neither counts nor resets
    with override_settings(DNS_TIMEOUT_SECONDS=0.2):
        assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"
    dns_server.mode = "normal"
    assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"
    third = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert third["status"] == "pending" and third["verified"] is False and third["verifiedAt"] is None


def test_a_published_record_resets_the_miss_count(secret_client, dns_server):
    body = add_domain(secret_client)
    publish(dns_server.zone, body, "dkim")
    secret_client.get(f"/domains/{body['id']}/verify")
    saved = dict(dns_server.zone)
    for _ in range(2):
        dns_server.zone.clear()
        secret_client.get(f"/domains/{body['id']}/verify")
    dns_server.zone.update(saved)
    secret_client.get(f"/domains/{body['id']}/verify")
    dns_server.zone.clear()
    for _ in range(2):
        assert secret_client.get(f"/domains/{body['id']}/verify").json()["status"] == "verified"


def test_operator_verified_domain_is_not_demoted(project, dns_server):
    domain = Domain.objects.get(name="alice.test")
    for _ in range(4):
        domain = domain_check(domain=domain)
    assert domain.status == "verified"
    assert domain.record_checks["dkim"]["status"] == "invalid"


def test_delete(secret_client):
    body = add_domain(secret_client)
    response = secret_client.delete(f"/domains/{body['id']}")
    assert response.status_code == 204 and response.content == b""
    assert not Domain.objects.filter(pk=body["id"]).exists()


@pytest.fixture
def template_sender(monkeypatch):
    """A finder as the templates app will register it: one template sending from news.example.com."""
    uses = []

    def finder(project, domain_name):
        return [u for u in uses if u["from"].endswith("@" + domain_name) or u["from"].endswith("." + domain_name)]

    monkeypatch.setitem(usage_finders.implementations, ("domain", "templates"), finder)
    return uses


def test_delete_is_409_while_a_template_sends_from_it(secret_client, template_sender):
    body = add_domain(secret_client)
    template_sender.append({"type": "template", "id": "t1", "name": "Welcome", "from": "hi@news.example.com"})
    response = secret_client.delete(f"/domains/{body['id']}")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "CONFLICT"
    assert 'template "Welcome"' in error["message"]
    assert error["details"]["usedBy"] == [
        {"type": "template", "id": "t1", "name": "Welcome", "from": "hi@news.example.com"}
    ]
    assert Domain.objects.filter(pk=body["id"]).exists()


def test_delete_is_allowed_when_another_verified_domain_covers_the_sender(secret_client, project, template_sender):
    from domains.services import domain_mark_verified_by_operator

    domain_mark_verified_by_operator(project=project.project, name="news.example.com")
    body = add_domain(secret_client)
    template_sender.append({"type": "template", "id": "t1", "name": "Welcome", "from": "hi@news.example.com"})
    assert secret_client.delete(f"/domains/{body['id']}").status_code == 204


@override_settings(INBOUND_MX_HOST="mx.herald.example")
def test_the_inbound_mx_is_an_optional_record_judged_by_the_host_it_names(secret_client, dns_server):
    body = add_domain(secret_client)
    assert record(body, "inbound") == {
        "type": "MX",
        "name": "example.com",
        "value": "10 mx.herald.example",
        "purpose": "inbound",
        "required": False,
        "status": "pending",
        "lastError": None,
    }
    publish(dns_server.zone, body, "dkim")
    dns_server.zone[("example.com", "MX")] = ["10 mail.elsewhere.example."]
    checked = secret_client.get(f"/domains/{body['id']}/verify").json()
    # The domain is verified without it (optional), and the record says what is wrong.
    assert checked["status"] == "verified"
    assert (record(checked, "inbound")["status"], record(checked, "inbound")["lastError"]) == (
        "invalid",
        "No MX record at example.com points to mx.herald.example",
    )
    dns_server.zone[("example.com", "MX")] = ["20 mx.herald.example.", "10 mail.elsewhere.example."]
    checked = secret_client.get(f"/domains/{body['id']}/verify").json()
    assert record(checked, "inbound")["status"] == "valid"
