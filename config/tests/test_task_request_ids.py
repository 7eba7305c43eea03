"""Log lines of a task carry the id of the request that queued it."""

from celery import shared_task

from config.celery import _carry_request_id
from core.http.middleware import current_request_id, set_request_id

seen: list[str] = []


@shared_task
def remember_request_id() -> None:
    seen.append(current_request_id())


def test_the_request_id_travels_in_the_task_headers():
    set_request_id("req-12345678")
    headers: dict = {}
    _carry_request_id(headers=headers)
    assert headers["request_id"] == "req-12345678"


def test_an_eager_task_leaves_the_requests_id_in_place():
    set_request_id("req-abcdefgh")
    remember_request_id.delay()
    assert seen and seen[-1]  # the task ran with an id of its own
    assert current_request_id() == "req-abcdefgh"
