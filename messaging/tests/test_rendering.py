import pytest
from liquid.exceptions import LiquidError

from core.errors import ValidationFailed
from messaging.content import rendering
from messaging.sending.mime import header_safe

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


def test_a_template_is_parsed_once_for_many_recipients():
    rendering._compile.cache_clear()
    source = "Hello {{ name }} <!-- unique 7f3a -->"
    for index in range(1000):
        rendering.render(source, {"name": f"n{index}"}, html=True)
    assert rendering._compile.cache_info().misses == 1


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
