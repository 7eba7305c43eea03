"""The service's own mail is tried again when its task reaches its soft time limit (a relay that hangs), as when
the relay refuses for a while: the person still gets the message, once."""

import asyncio

import pytest
from celery.exceptions import Retry

from accounts.identity.tasks import send_account_email_task
from accounts.identity.users import user_get_or_create

pytestmark = pytest.mark.django_db


def test_an_account_email_whose_task_runs_out_of_time_is_sent_on_its_retry(smtp_sink, soft_time_limit):
    user, _ = user_get_or_create(email="ann@example.test", password="a long and unusual passphrase")
    original_rcpt, hung = smtp_sink.handle_RCPT, []

    async def hanging_rcpt(server, session, envelope, address, rcpt_options):
        if not hung:
            hung.append(address)
            soft_time_limit()
            await asyncio.sleep(0.5)
        return await original_rcpt(server, session, envelope, address, rcpt_options)

    smtp_sink.handle_RCPT = hanging_rcpt
    with pytest.raises(Retry) as retry:  # how the eager test broker hands back a retry: a worker publishes it
        send_account_email_task.delay("verify_email", str(user.id))
    assert hung == ["ann@example.test"] and smtp_sink.received == []
    retry.value.sig.apply()  # the retry, when its time comes
    [message] = smtp_sink.received
    assert message.rcpt_tos == ["ann@example.test"] and "/verify-email" in message.text
