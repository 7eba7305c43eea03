"""The API reference (docs/api/*.md) is checked against the running API, and the documentation's links resolve.

Every page's examples are replayed in order against a fresh project, through Django's test client, and each answer
must have the status and the shape the page shows. The example format (fenced `http` request blocks, each followed by
a `json response <status>` or `http response <status>` block, with `{{name.path}}` references and placeholders) is
described in docs/api/README.md, section "Examples"; this module is its one implementation.
"""

import email
import email.policy
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core import mail

from conftest import client_with
from domains.dns import clear_local_cache
from domains.tests.dnsserver import DnsServer

ROOT = Path(__file__).resolve().parents[2]
API_DOCS = ROOT / "docs" / "api"
PAGES = sorted(API_DOCS.glob("*.md"))

# The DNS the examples see: a local zone in which example.com receives mail and has a website; every other name
# does not exist.
ZONE = {
    ("example.com", "MX"): ["10 mx.example.com."],
    ("example.com", "A"): ["192.0.2.10"],
}
WEBHOOK_SECRET = "docs-example-secret"

# `{{name.path}}`: a value from an earlier response (or a built-in); no spaces, so Liquid's `{{ name }}` is left alone.
REFERENCE = re.compile(r"\{\{([A-Za-z_][\w-]*(?:\.[\w-]+)+)\}\}")
FENCE = re.compile(r"^```(.*)$")
MARKERS = {
    "…": r".*",
    "<uuid>": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "<timestamp>": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
    "<string>": r".+",
    "<number>": r"-?\d+(?:\.\d+)?",
}
MARKER = re.compile("|".join(re.escape(marker) for marker in MARKERS))
ANY = "…"


@dataclass
class Example:
    page: str
    line: int
    name: str | None
    request: str
    status: int = 0
    response_kind: str = ""  # "json" or "http"
    response: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


# Parsing ---------------------------------------------------------------------------------------------------------


def fenced_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number, info string, content) of every fenced block."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        start, body = index + 1, []
        index += 1
        while index < len(lines) and not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        blocks.append((start, opening.group(1).strip(), "\n".join(body)))
        index += 1
    return blocks


def parse_examples(path: Path) -> list[Example]:
    """The page's request/response pairs, in order. A request is a block whose info string is `http` or
    `http <name>`; the next fenced block must be its response, `json response <status>` or `http response
    <status>`."""
    examples: list[Example] = []
    pending: Example | None = None
    for line, info, content in fenced_blocks(path.read_text()):
        words = info.split()
        is_response = len(words) >= 3 and words[1] == "response"
        if pending is not None:
            assert is_response, f"{path.name}:{line}: the request above must be followed by a response block"
            assert words[0] in ("json", "http") and words[2].isdigit(), f"{path.name}:{line}: bad response {info!r}"
            pending.status, pending.response_kind, pending.response = int(words[2]), words[0], content
            examples.append(pending)
            pending = None
        elif is_response:
            raise AssertionError(f"{path.name}:{line}: a response block without a request before it")
        elif words[:1] == ["http"]:
            assert len(words) <= 2, f"{path.name}:{line}: a request's info string is `http` or `http <name>`"
            pending = Example(page=path.name, line=line, name=words[1] if len(words) == 2 else None, request=content)
    assert pending is None, f"{path.name}:{pending.line}: the last request has no response block"
    return examples


def split_message(text: str) -> tuple[list[str], str]:
    """Head lines and body of an HTTP-style block (a blank line separates them)."""
    head, _, body = text.strip("\n").partition("\n\n")
    return head.splitlines(), body


# Substitution ----------------------------------------------------------------------------------------------------


def lookup(captures: dict, reference: str, where: str):
    """The value `{{name.path}}` refers to: `captures` holds the named answers so far and the built-ins."""
    name, *path = reference.split(".")
    if name not in captures:
        raise AssertionError(f"{where}: {{{{{reference}}}}} names no earlier example or built-in ({name!r})")
    value = captures[name]
    for part in path:
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise AssertionError(f"{where}: {{{{{reference}}}}} does not resolve (no {part!r})")
    return value


def substitute(text: str, captures: dict, where: str) -> str:
    def value(match: re.Match) -> str:
        found = lookup(captures, match.group(1), where)
        return found if isinstance(found, str) else json.dumps(found)

    return REFERENCE.sub(value, text)


def mail_links() -> dict:
    """Paths of the links in the last message delivered (the test delivers to memory)."""
    if not mail.outbox:
        return {}
    last = mail.outbox[-1]
    # The service's own mail (accounts) is a Django message; delivered mail carries the bytes it was sent as.
    raw = last.raw if hasattr(last, "raw") else last.message().as_bytes()
    message = email.message_from_bytes(raw, policy=email.policy.default)
    html = message.get_body(preferencelist=("html",)).get_content()
    links = {}
    for kind, prefix in (("unsubscribe", "/unsubscribe/"), ("subscribe", "/subscribe/"), ("manage", "/manage/")):
        found = re.search(rf'https?://[^"\s]*{prefix}[^"\s<]+', html + " " + str(message["List-Unsubscribe"]))
        if found:
            links[kind] = urlsplit(found.group(0)).path
    for kind, prefix in (("open", "/o/"), ("click", "/c/")):
        found = re.search(rf'https?://[^"\s]*{prefix}[^"\s<]+', html)
        if found:
            links[kind] = urlsplit(found.group(0)).path
    return links


# Matching --------------------------------------------------------------------------------------------------------


def pattern(text: str) -> re.Pattern:
    parts, position = [], 0
    for match in MARKER.finditer(text):
        parts += [re.escape(text[position : match.start()]), MARKERS[match.group(0)]]
        position = match.end()
    parts.append(re.escape(text[position:]))
    return re.compile("".join(parts), re.S)


def mismatches(expected, actual, path: str = "body") -> list[str]:
    """Where `actual` differs from the example `expected`: keys, lengths and types everywhere, values where the
    example gives them (strings are patterns with placeholders; `"…"` alone matches any value)."""
    if expected == ANY:
        return []
    if expected == "<number>":
        ok = isinstance(actual, int | float) and not isinstance(actual, bool)
        return [] if ok else [f"{path}: expected a number, got {actual!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        problems = []
        if set(expected) != set(actual):
            missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
            problems.append(f"{path}: keys differ (missing {missing}, not in the example {extra})")
        for key in expected.keys() & actual.keys():
            problems += mismatches(expected[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: expected an array, got {actual!r}"]
        open_ended = bool(expected) and expected[-1] == ANY
        items = expected[:-1] if open_ended else expected
        if len(actual) < len(items) or (not open_ended and len(actual) != len(items)):
            return [f"{path}: expected {len(items)}{' or more' if open_ended else ''} items, got {len(actual)}"]
        problems = []
        for index, item in enumerate(items):
            problems += mismatches(item, actual[index], f"{path}.{index}")
        return problems
    if isinstance(expected, str):
        if not isinstance(actual, str) or not pattern(expected).fullmatch(actual):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return []
    if type(expected) is not type(actual) and not (
        isinstance(expected, int | float) and isinstance(actual, int | float) and not isinstance(actual, bool)
    ):
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


# Replaying -------------------------------------------------------------------------------------------------------


def keys_in(value: str, keys) -> str:
    return value.replace("sk_...", keys.secret_key).replace("pk_...", keys.public_key)


def send(client, example: Example, captures: dict, keys):
    head, body = split_message(substitute(example.request, captures, example.where))
    method, _, target = head[0].partition(" ")
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip()] = keys_in(value.strip(), keys)
    content_type = headers.pop("Content-Type", "")
    if content_type.startswith("application/json") and body and example.status != 400:
        json.loads(body)  # a typo in an example is not an example of a malformed body
    raw = body.encode()
    if content_type.startswith("multipart/"):
        raw = body.replace("\n", "\r\n").encode()
    if headers.get("X-Herald-Signature") == "v1=<hmac>":
        signed = f"{headers['X-Herald-Timestamp']}.".encode() + raw
        headers["X-Herald-Signature"] = "v1=" + hmac.new(WEBHOOK_SECRET.encode(), signed, hashlib.sha256).hexdigest()
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    if content_type:
        extra["content_type"] = content_type
    return client.generic(method, target.strip(), raw, **extra)


def check(example: Example, response, captures: dict) -> list[str]:
    if response.status_code != example.status:
        return [f"status {response.status_code}, the example says {example.status}"]
    expected = substitute(example.response, captures, example.where)
    if example.response_kind == "json":
        head, body = [], expected
    else:
        head, body = split_message(expected)
    problems = []
    for line in head:
        name, _, value = line.partition(":")
        actual = response.get(name.strip())
        if actual is None or not pattern(value.strip()).fullmatch(actual):
            problems.append(f"header {name.strip()}: expected {value.strip()!r}, got {actual!r}")
    body = body.strip()
    if not body:
        if example.response_kind == "json" and response.content:
            problems.append(f"expected no body, got {response.content[:200]!r}")
        return problems
    if body[0] in "[{":
        assert "json" in response.get("Content-Type", ""), f"{example.where}: the answer is not JSON"
        return problems + mismatches(json.loads(body), response.json())
    text = response.content.decode()
    if not pattern(body).search(text):
        problems.append(f"the body does not contain {body!r}")
    return problems


@pytest.fixture(scope="module")
def _dns_server():
    server = DnsServer()  # one for the module: stopping one waits for its serving threads to notice
    yield server
    server.stop()


@pytest.fixture
def local_dns(_dns_server, settings):
    _dns_server.reset()
    _dns_server.zone.update(ZONE)
    settings.DNS_NAMESERVERS = [_dns_server.address]
    settings.DNS_TIMEOUT_SECONDS = 2.0
    clear_local_cache()
    yield _dns_server
    clear_local_cache()


@pytest.fixture
def example_settings(settings):
    """The embedded defaults the examples were written against, whatever the environment of this run says."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.API_RATE_LIMIT_PER_MINUTE = 1000
    settings.PUBLIC_URL = settings.API_URL = "http://localhost:8000"
    settings.DOMAINS_SPF_INCLUDES = settings.DOMAINS_SPF_IP_ADDRESSES = []
    settings.DOMAINS_RETURN_PATH_HOST = ""
    settings.FEEDBACK_GENERIC_SECRET = WEBHOOK_SECRET
    settings.ANYMAIL = {**settings.ANYMAIL, "WEBHOOK_SECRET": []}
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    return settings


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_examples_replay(page, project, example_settings, local_dns, django_capture_on_commit_callbacks):
    examples = parse_examples(page)
    assert examples, f"{page.name} has no examples"
    captures = {
        "project": {"id": str(project.id), "name": project.project.name},
        "now": {"unix": str(int(time.time())), "date": datetime.now(UTC).date().isoformat()},
    }
    client = client_with(None)  # one client: it loads the middleware once; keys go in each request's headers
    for example in examples:
        captures["mail"] = mail_links()
        # Run what each request leaves for after its commit (deliveries, jobs), as the workers would.
        with django_capture_on_commit_callbacks(execute=True):
            response = send(client, example, captures, project.keys)
        problems = check(example, response, captures)
        assert not problems, f"{example.where}:\n  " + "\n  ".join(problems) + f"\nanswer: {response.content[:3000]!r}"
        if example.name:
            assert example.name not in captures, f"{example.where}: the name {example.name} is taken"
            captures[example.name] = response.json()


# Links -----------------------------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def without_code(text: str) -> str:
    return re.sub(r"```.*?```", "", text, flags=re.S)


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation other than `-` and `_` dropped, spaces as dashes."""
    headings = re.findall(r"^#+\s+(.*)$", without_code(path.read_text()), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_point_at_files(document):
    broken = []
    for target in LINK.findall(without_code(document.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (document.parent / file_part) if file_part else document
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
            broken.append(target)
    assert not broken, f"{document.relative_to(ROOT)} links to missing files or headings: {broken}"


OUTSIDE = re.compile(r"decisions\.md|interface\.md|shared/spec")


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_documents_name_no_file_outside_the_repository(document):
    outside = OUTSIDE.findall(document.read_text())
    assert not outside, f"{document.relative_to(ROOT)} refers to {outside}: state the rule here instead"


def test_code_names_no_file_outside_the_repository():
    sources = [path for path in ROOT.rglob("*.py") if not {".venv", "var"} & set(path.relative_to(ROOT).parts)]
    naming = sorted(
        str(path.relative_to(ROOT))
        for path in sources
        if path != Path(__file__).resolve() and OUTSIDE.search(path.read_text())
    )
    assert not naming, f"{naming} refer to documents outside the repository: point at docs/ instead"
