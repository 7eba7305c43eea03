"""Three real `celery -A config beat` processes on the test database and broker: only the one holding the lease
publishes; stopped (SIGTERM) it is replaced at once, killed (SIGKILL) within the lease's bound; and no run of an entry
is published twice, by the messages of a probe entry (`config/tests/beat_probe.py`).
"""

import os
import signal
from contextlib import ExitStack

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from config.leases import BEAT_LEASE, lease_get
from config.tests.beat_probe import EXPIRES, PROBE, PROBE_ENTRY, QUEUE, closest, drain, probe_queue_declare, published
from config.tests.processes import celery_beat, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RETRY = 0.25


@pytest.fixture
def probe(real_broker):
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name=PROBE, task=PROBE_ENTRY["task"], interval=every, queue=QUEUE, expire_seconds=EXPIRES
    )
    probe_queue_declare()
    yield
    drain()


def runs() -> int:
    return PeriodicTask.objects.get(name=PROBE).total_run_count


def leader_pid() -> int | None:
    lease = lease_get(name=BEAT_LEASE)
    return int(lease.pid) if lease is not None and not lease.expired else None


def leader_after(previous: int) -> int | None:
    pid = leader_pid()
    return pid if pid != previous else None


def assert_published_once_per_run(headers: list[dict]) -> None:
    times = published(headers)
    # One message per recorded run; a leader stopped between recording a run and publishing it loses that one.
    assert 0 <= runs() - len(times) <= 2, (runs(), times)
    # Two beats publishing the same run would publish within milliseconds of each other; runs are a second apart.
    assert closest(times) > 0.5, times


def sent_lines(log) -> list[str]:
    return [line for line in log.read_text().splitlines() if f"Sending due task {PROBE}" in line]


def test_one_beat_of_three_publishes_a_stopped_one_is_replaced_at_once_and_a_killed_one_within_the_lease(
    probe, tmp_path
):
    lease = 3.0
    env = {"LOG_LEVEL": "INFO", "BEAT_LEASE_SECONDS": str(lease), "BEAT_LEASE_RETRY_SECONDS": str(RETRY)}
    logs = {}
    with ExitStack() as stack:
        for i in range(3):
            log = tmp_path / f"beat-{i}.log"
            stderr = stack.enter_context(log.open("w"))
            process = stack.enter_context(celery_beat(tmp_path / f"schedule-{i}", stderr=stderr, **env))
            logs[process.pid] = log
        first = wait_until(leader_pid, timeout=30, what="a beat to take the lease")
        wait_until(lambda: runs() >= 2, timeout=15, what="two runs of the probe")
        assert {pid for pid, log in logs.items() if sent_lines(log)} == {first}  # only the leader publishes
        # A standby says so at its first try, which a loaded machine may start after the leader's first runs.
        wait_until(
            lambda: all(
                "standing by, the lease is held by" in log.read_text() for pid, log in logs.items() if pid != first
            ),
            timeout=30,
            what="both standbys to stand by",
        )

        # Stopped, the leader releases the lease: a standby takes it within the retry interval, not the lease.
        asked = lease_get(name=BEAT_LEASE).now  # the database's clock
        os.kill(first, signal.SIGTERM)
        second = wait_until(lambda: leader_after(first), timeout=10, what="a standby to take the lease")
        after_stop = (lease_get(name=BEAT_LEASE).acquired_at - asked).total_seconds()
        assert "released the lease" in logs[first].read_text()
        before = runs()
        wait_until(lambda: runs() > before, timeout=15, what="a run by the second leader")

        # Killed, the leader says nothing: the last standby takes the lease once it expired.
        asked = lease_get(name=BEAT_LEASE).now
        os.kill(second, signal.SIGKILL)
        third = wait_until(lambda: leader_after(second), timeout=15, what="the last standby to take the lease")
        after_kill = (lease_get(name=BEAT_LEASE).acquired_at - asked).total_seconds()
        before = runs()
        wait_until(lambda: runs() > before, timeout=15, what="a run by the third leader")
    print(
        f"takeover after SIGTERM {after_stop:.2f} s, after SIGKILL {after_kill:.2f} s (lease {lease} s, retry {RETRY} s)"
    )
    # The earliest a takeover can come after a leader that said nothing is its lease less a renewal interval: a
    # release is taken within a retry interval, well before. The bound after a kill has 1.5 s for a busy machine.
    assert after_stop < lease - RETRY
    assert lease - RETRY <= after_kill <= lease + RETRY + 1.5
    assert len({first, second, third}) == 3
    assert all(sent_lines(logs[pid]) for pid in (first, second, third))
    assert all("took the lease, scheduling from now on" in logs[pid].read_text() for pid in (second, third))

    assert_published_once_per_run(drain())
