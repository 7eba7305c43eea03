"""POST /v1/verify through HTTP, every field against the loopback DNS server."""

import pytest

FALSE_FLAGS = {
    "isDisposable": False,
    "isAlias": False,
    "isTypo": False,
    "isPlusAddressed": False,
    "isPersonalEmail": False,
}


@pytest.fixture
def zone(dns_zone):
    # A normal mail domain with a website.
    dns_zone[("acme-corp.com", "MX")] = ["10 mx1.acme-corp.com.", "20 mx2.acme-corp.com."]
    dns_zone[("acme-corp.com", "A")] = ["192.0.2.1"]
    # Mail only: MX but no address records anywhere.
    dns_zone[("mailonly.net", "MX")] = ["10 mx.provider.net."]
    # No MX, but an address record (RFC 5321 fallback); the website is only on www.
    dns_zone[("fallback.org", "AAAA")] = ["2001:db8::1"]
    dns_zone[("www.nomail.org", "A")] = ["192.0.2.7"]
    dns_zone[("nomail.org", "TXT")] = ["v=spf1 -all"]
    # Null MX (RFC 7505): explicitly no mail.
    dns_zone[("nullmx.com", "MX")] = ["0 ."]
    dns_zone[("nullmx.com", "A")] = ["192.0.2.9"]
    for provider in ("gmail.com", "mailinator.com", "duck.com", "gmial.com", "hotmial.com", "gmail.con"):
        dns_zone[(provider, "MX")] = [f"5 mx.{provider}."]
    return dns_zone


def verify(client, email):
    response = client.post("/v1/verify", {"email": email}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True
    return body["data"]


@pytest.mark.parametrize(
    ("email", "expected"),
    [
        (
            "jane@acme-corp.com",
            {
                "valid": True,
                "domainExists": True,
                "hasMxRecords": True,
                "hasWebsite": True,
                "reasons": ["Email appears to be valid"],
            },
        ),
        (
            "jane@mailonly.net",
            {
                "valid": True,
                "domainExists": True,
                "hasMxRecords": True,
                "hasWebsite": False,
                "reasons": ["Email appears to be valid"],
            },
        ),
        (
            "jane@fallback.org",
            {
                "valid": True,
                "domainExists": True,
                "hasMxRecords": False,
                "hasWebsite": True,
                "reasons": ["No MX records; mail falls back to the domain's address record"],
            },
        ),
        (
            "jane@nomail.org",
            {
                "valid": False,
                "domainExists": True,
                "hasMxRecords": False,
                "hasWebsite": True,
                "reasons": ["Domain cannot receive email (no MX records found)"],
            },
        ),
        (
            "jane@nullmx.com",
            {
                "valid": False,
                "domainExists": True,
                "hasMxRecords": False,
                "hasWebsite": True,
                "reasons": ["Domain does not accept email (null MX record)"],
            },
        ),
        (
            "jane@dead-domain-xyz.com",
            {
                "valid": False,
                "domainExists": False,
                "hasMxRecords": False,
                "hasWebsite": False,
                "reasons": ["Domain does not exist (no nameservers found)"],
            },
        ),
    ],
)
def test_dns_fields(secret_client, zone, email, expected):
    assert verify(secret_client, email) == {"email": email, **FALSE_FLAGS, **expected}


@pytest.mark.parametrize(
    ("email", "flags"),
    [
        ("someone@mailinator.com", {"isDisposable": True, "isPersonalEmail": True}),
        ("someone@duck.com", {"isAlias": True, "isPersonalEmail": True}),
        ("someone+news@acme-corp.com", {"isPlusAddressed": True}),
        ("someone@gmail.com", {"isPersonalEmail": True}),
    ],
)
def test_flags_do_not_change_valid(secret_client, zone, email, flags):
    data = verify(secret_client, email)
    assert {key: data[key] for key in FALSE_FLAGS} == FALSE_FLAGS | flags
    assert data["valid"] is True
    assert data["reasons"] == ["Email appears to be valid"]
    assert "suggestedEmail" not in data


@pytest.mark.parametrize(
    ("email", "suggestion"),
    [
        ("jane@gmial.com", "gmail.com"),
        ("jane@gmail.con", "gmail.com"),
        ("jane@hotmial.com", "hotmail.com"),
    ],
)
def test_typo(secret_client, zone, email, suggestion):
    data = verify(secret_client, email)
    assert data["isTypo"] is True
    assert data["suggestedEmail"] == f"jane@{suggestion}"
    assert data["reasons"] == [f"Possible typo detected, did you mean {suggestion}?"]
    assert data["valid"] is True  # the domain has MX records; a typo does not make it invalid


def test_typo_of_a_dead_domain_lists_both_reasons_in_order(secret_client, zone):
    data = verify(secret_client, "jane@yahooo.com")
    assert data["isTypo"] is True and data["valid"] is False
    assert data["reasons"] == [
        "Possible typo detected, did you mean yahoo.com?",
        "Domain does not exist (no nameservers found)",
    ]


@pytest.mark.parametrize(
    "domain", ["gmail.com", "ymail.com", "mail.com", "email.com", "acme-corp.com", "gmx.de", "outlook.com"]
)
def test_real_domains_are_not_typos(domain):
    from domains.verify import typo_suggestion

    assert typo_suggestion(domain) is None


@pytest.mark.parametrize(
    "email",
    [
        "plainaddress",
        "two@@signs.com",
        "@nolocal.com",
        "jane@",
        "jane@localhost",
        "jane@exa mple.com",
        "a" * 70 + "@acme-corp.com",
    ],
)
def test_malformed_address_is_200_invalid(secret_client, zone, email):
    data = verify(secret_client, email)
    assert data == {
        "email": email,
        "valid": False,
        **FALSE_FLAGS,
        "domainExists": False,
        "hasWebsite": False,
        "hasMxRecords": False,
        "reasons": ["Invalid email format"],
    }


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "invalid_type"),
        ({"email": None}, "invalid_type"),
        ({"email": 42}, "invalid_type"),
        ({"email": True}, "invalid_type"),
        ({"email": ["a@b.com"]}, "invalid_type"),
        ({"email": ""}, "too_small"),
        ({"email": "a" * 310 + "@gmail.com"}, "too_big"),
        ({"email": "a" * 400}, "too_big"),
    ],
)
def test_bad_input_is_422(secret_client, body, code):
    response = secret_client.post("/v1/verify", body, format="json")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["errors"][0]["field"], error["errors"][0]["code"]) == ("email", code)


def test_319_characters_are_judged_not_refused(secret_client, zone):
    data = verify(secret_client, "a" * 309 + "@gmail.com")
    assert data["valid"] is False and data["reasons"] == ["Invalid email format"]


def test_needs_the_secret_key(public_client, anon_client):
    assert anon_client.post("/v1/verify", {"email": "a@b.com"}, format="json").status_code == 401
    response = public_client.post("/v1/verify", {"email": "a@b.com"}, format="json")
    assert response.status_code == 401 and response.json()["error"]["code"] == "INVALID_API_KEY"


def test_dns_timeout_is_an_answer_not_a_500(secret_client, silent_dns):
    data = verify(secret_client, "jane@acme-corp.com")
    assert data["valid"] is False
    assert data["domainExists"] is False and data["hasMxRecords"] is False
    assert data["reasons"] == ["Could not check the domain's DNS records: DNS lookup of acme-corp.com timed out"]


def test_a_thousand_verifications_of_one_domain_ask_dns_once_per_record(secret_client, zone, dns_server):
    for i in range(1000):
        verify(secret_client, f"user{i}@acme-corp.com")
    assert sorted(set(dns_server.queries)) == sorted(dns_server.queries)
    assert ("acme-corp.com", "MX") in dns_server.queries
    assert len(dns_server.queries) <= 3  # MX, A (the website and fallback answer), nothing else


@pytest.mark.parametrize("email", ["jane@gmial.com", "jane@acme-corp.com", "nonsense"])
def test_hot_path_json_matches_the_documented_serializer(zone, email):
    from domains.api.serializers import VerifyOutputSerializer
    from domains.api.views import verify_result_json
    from domains.verify import email_verify

    result = email_verify(email=email)
    assert verify_result_json(result) == VerifyOutputSerializer(result).data
