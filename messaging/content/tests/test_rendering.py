import pytest
from liquid.exceptions import LiquidError

from core.errors import ValidationFailed
from messaging.content import rendering
from messaging.vocabulary import header_safe

SCOPE = {"name": "<b>Ann</b>", "first name": "Ann", "plan": "pro", "data": {"plan": "pro"}, "n": 3}


@pytest.mark.parametrize(
    ("source", "html", "expected"),
    [
        ("Hi {{ name }}", True, "Hi &lt;b&gt;Ann&lt;/b&gt;"),
        ("Hi {{ name | raw }}", True, "Hi <b>Ann</b>"),
        ("Hi {{ name }}", False, "Hi <b>Ann</b>"),
        ('Hi {{ nobody ?? "friend" }}', True, "Hi friend"),
        ('Hi {{ plan ?? "free" }}', True, "Hi pro"),
        ("Hi {{first name}}!", True, "Hi Ann!"),
        ("Plan {{ data.plan }} / {{ plan | upcase }}", True, "Plan pro / PRO"),
        ("[{{ missing }}]", True, "[]"),
        ("{% if n > 2 %}many{% else %}few{% endif %}", True, "many"),
    ],
)
def test_template_language(source, html, expected):
    assert rendering.render(source, SCOPE, html=html) == expected


def test_a_syntax_error_names_the_field_line_and_column():
    with pytest.raises(ValidationFailed) as caught:
        rendering.check_syntax(field="body", source="<p>Hello</p>\n{% if %}", html=True)
    error = caught.value.errors[0]
    assert error["field"] == "body"
    assert "line 2, column" in error["message"]


@pytest.mark.parametrize("source", ["{% include 'secrets' %}", "{% render 'x' %}"])
def test_the_sandbox_has_no_file_tags(source):
    with pytest.raises(LiquidError):
        rendering.render(source, {}, html=True)


def test_lenient_rendering_falls_back_to_plain_substitution():
    source = "Hi {{ name }} {% if %}"
    assert rendering.render(source, SCOPE, html=True, lenient=True) == "Hi &lt;b&gt;Ann&lt;/b&gt; {% if %}"


@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        # Errors python-liquid finds at the end of the input or of an output statement come without a place.
        ("Hi {% if name %}unclosed", 1, 25),
        ("<p>Hi</p>\n{% for x in y %}\n<p>", 3, 4),
        ("one\ntwo {{ x | }} three", 2, 5),
    ],
)
def test_every_syntax_error_has_a_line_and_column(source, line, column):
    with pytest.raises(ValidationFailed) as caught:
        rendering.check_syntax(field="subject", source=source, html=False)
    assert caught.value.errors[0]["message"].endswith(f"at line {line}, column {column}")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{% for i in (1..10001) %}x{% endfor %}", "Template loops past 10,000 iterations"),
        (
            "{% for i in (1..200) %}{% for j in (1..200) %}x{% endfor %}{% endfor %}",
            "Template loops past 10,000 iterations",
        ),
        (
            '{% assign s = "0123456789abcdef" %}{% for i in (1..20) %}{% assign s = s | append: s %}{% endfor %}',
            "Template builds strings past 1 MB",
        ),
        (
            "{% capture s %}{% for i in (1..9000) %}" + "x" * 128 + "{% endfor %}{% endcapture %}",
            "Template builds strings past 1 MB",
        ),
        (
            '{% assign s = "0123456789abcdef" %}{% for i in (1..15) %}{% assign s = s | append: s %}{% endfor %}'
            "{% for i in (1..9) %}{{ s }}{% endfor %}",
            "Template renders past 4 MB",
        ),
    ],
)
def test_a_template_past_a_rendering_limit_is_refused_when_saved(source, message):
    with pytest.raises(ValidationFailed) as caught:
        rendering.check_syntax(field="body", source=source, html=True)
    assert caught.value.errors[0] == {"field": "body", "message": message, "code": "too_big"}


def test_a_limit_is_never_answered_with_the_lenient_fallback():
    with pytest.raises(ValidationFailed) as caught:
        rendering.render_email(
            subject="S", body="{% for i in items %}{{ i }}{% endfor %}", scope={"items": range(10_001)}, lenient=True
        )
    assert caught.value.errors[0]["field"] == "body"


def test_a_template_at_the_limits_renders():
    source = "{% for i in (1..10000) %}x{% endfor %}"
    rendering.check_syntax(field="body", source=source, html=True)
    assert rendering.render(source, {}, html=True) == "x" * 10_000


def test_a_template_is_parsed_once_for_many_recipients():
    rendering._compiled.clear()
    source = "Hello {{ name }} <!-- unique 7f3a -->"
    for index in range(1000):
        rendering.render(source, {"name": f"n{index}"}, html=True)
    assert rendering._compiled.misses == 1


def test_the_compiled_template_cache_is_bounded_and_keeps_no_source():
    rendering._compiled.clear()
    for index in range(rendering._CompiledCache.size + 100):
        rendering.render(f"Hello {{{{ name }}}} {index}", {}, html=True)
    rendering.render("x" * (rendering._CompiledCache.largest_source + 1), {}, html=True)
    entries = rendering._compiled._entries
    assert len(entries) == rendering._CompiledCache.size
    assert all(not any(isinstance(part, str) for part in key) for key in entries)


def test_system_variables_cannot_be_shadowed_by_data():
    scope = rendering.template_scope(
        contact_id="c1",
        email="a@b.test",
        subscribed=True,
        data={"unsubscribeUrl": "https://evil.test", "email": "spoof@x.test", "plan": "pro"},
        links={"unsubscribeUrl": "https://svc/u/t", "subscribeUrl": "s", "manageUrl": "m"},
    )
    assert scope["unsubscribeUrl"] == "https://svc/u/t"
    assert scope["email"] == "a@b.test"
    assert scope["plan"] == scope["data"]["plan"] == "pro"


def test_data_rendered_into_a_subject_cannot_break_its_line():
    rendered = rendering.render_email(
        subject="Hi {{ name }}", body="<p>x</p>", scope={"name": "Ann\r\nBcc: evil@x.test\x00"}, lenient=True
    )
    assert header_safe(rendered.subject)
    assert rendered.subject.split() == ["Hi", "Ann", "Bcc:", "evil@x.test"]
