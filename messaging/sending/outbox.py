"""The development outbox (`EMAIL_URL=filemail://<folder>`, the embedded default): one `.eml` file per message,
exactly the bytes an SMTP server would have received, which any mail client opens; and one log line per message
naming the recipient, the subject, the file and the message's first link (a verification or invitation link is
then one click away in the `make run` log)."""

import logging
import re
import secrets
from email import message_from_bytes, policy
from pathlib import Path

from django.core.mail.backends.base import BaseEmailBackend
from django.utils import timezone

logger = logging.getLogger(__name__)
_HREF = re.compile(r"""href=["'](https?://[^"']+)""")
_LINK = re.compile(r"https?://[^\s\"'<>]+")


class EmailBackend(BaseEmailBackend):
    def __init__(self, *args, file_path: str | None = None, **kwargs):
        from django.conf import settings

        super().__init__(*args, **kwargs)
        self.folder = Path(file_path or settings.EMAIL_FILE_PATH)

    def send_messages(self, email_messages) -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        for message in email_messages:
            raw = message.message().as_bytes(linesep="\r\n")
            path = self.folder / f"{timezone.now():%Y%m%d-%H%M%S-%f}-{secrets.token_hex(3)}.eml"
            path.write_bytes(raw)
            self._log(raw, path)
        return len(email_messages)

    def _log(self, raw: bytes, path: Path) -> None:
        parsed = message_from_bytes(raw, policy=policy.default)
        link = _first_link(parsed)
        logger.info(
            "Mail to %s: %r written to %s%s",
            parsed.get("To", ""),
            str(parsed.get("Subject", "")),
            path,
            f" (first link: {link})" if link else "",
        )


def _first_link(parsed) -> str | None:
    html = parsed.get_body(preferencelist=("html",))
    if html is not None and (found := _HREF.search(html.get_content())):
        return found.group(1).replace("&amp;", "&")
    text = parsed.get_body(preferencelist=("plain",))
    if text is not None and (found := _LINK.search(text.get_content())):
        return found.group(0).rstrip(".,;:)]")
    return None
