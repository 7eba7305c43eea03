"""The MIME writer refuses any header value that would break out of its line, whatever validated it upstream."""

import email
from dataclasses import replace
from datetime import UTC, datetime
from email import policy

import pytest

from messaging.sending.mime import Attachment, MimeMessage, UnsafeHeader, build, format_address

MESSAGE = MimeMessage(
    from_email="hello@alice.test",
    from_name="Alice Shop",
    to_email="ann@example.test",
    to_name="Ann Lee",
    subject="Hello",
    html="<p>Hello</p>",
    message_id="<1@alice.test>",
    date=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    reply_to="support@alice.test",
    headers={"X-Campaign": "spring"},
)
INJECTED = "\r\nBcc: evil@x.test"


@pytest.mark.parametrize(
    "changes",
    [
        {"from_name": f"Support{INJECTED}"},
        {"from_name": "Süpport\nBcc: evil@x.test"},  # non-ASCII, would be encoded: refused all the same
        {"from_name": "Support\x00"},
        {"to_name": f"Ann{INJECTED}"},
        {"to_email": f"ann@example.test{INJECTED}"},
        {"from_email": f"hello@alice.test{INJECTED}"},
        {"subject": f"Hello{INJECTED}"},
        {"subject": "Hello\rBcc: evil@x.test"},
        {"reply_to": f"support@alice.test{INJECTED}"},
        {"message_id": f"<1@alice.test>{INJECTED}"},
        {"headers": {"X-Note": f"a{INJECTED}"}},
        {"headers": {"X-Note": "a" * 1000 + INJECTED}},  # long values take the folding path
        {"headers": {"X-Note\r\nBcc": "evil@x.test"}},
        {"headers": {"X-Note: a\r\nBcc": "evil@x.test"}},
        {"attachments": [Attachment(filename=f"a.txt{INJECTED}", content=b"x")]},
        {"attachments": [Attachment(filename='a.txt"; name="b.exe', content=b"x")]},
        {"attachments": [Attachment(filename="a.txt", content=b"x", content_id=f"logo{INJECTED}")]},
    ],
)
def test_the_writer_refuses_a_value_that_would_add_a_header(changes):
    with pytest.raises(UnsafeHeader):
        build(replace(MESSAGE, **changes))


def test_format_address_refuses_a_display_name_with_a_line_break():
    with pytest.raises(UnsafeHeader):
        format_address(f"Support{INJECTED}", "hello@alice.test")


def test_a_safe_message_keeps_its_headers():
    message = email.message_from_bytes(build(MESSAGE), policy=policy.default)
    assert message["From"] == "Alice Shop <hello@alice.test>"
    assert message["To"] == "Ann Lee <ann@example.test>"
    assert message["Bcc"] is None


def test_a_long_non_ascii_filename_is_written_without_a_bare_line_feed():
    name = "Rapport annuel détaillé pour l'exercice deux mille vingt-cinq, version finale.pdf"
    raw = build(replace(MESSAGE, attachments=[Attachment(filename=name, content=b"%PDF")]))
    assert b"\n" not in raw.replace(b"\r\n", b"")
    message = email.message_from_bytes(raw, policy=policy.default)
    [part] = [part for part in message.walk() if part.get_filename()]
    assert part.get_filename() == name
