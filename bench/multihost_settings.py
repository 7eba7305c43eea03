"""Settings of the multi-host drill's processes (`bench/multihost.py`): the service's, with the beat entries the
drill's books depend on every 2 s instead of every minute (the sweepers that give a lost worker's mail and jobs to
another, the campaigns' start and finish), as `bench/chaos.py` publishes its sweepers every 5 s, and a probe entry
that shows every publication of the beat (`config/tests/beat_probe.py`)."""

from datetime import timedelta

from config.settings.base import *  # noqa: F403
from config.settings.base import CELERY_BEAT_SCHEDULE
from config.tests.beat_probe import PROBE, PROBE_ENTRY

PROMPT = ("sweep-emails", "requeue-stalled-jobs", "start-due-campaigns", "finish-sending-campaigns")
CELERY_BEAT_SCHEDULE = {
    **{
        name: {**entry, "schedule": timedelta(seconds=2)} if name in PROMPT else entry
        for name, entry in CELERY_BEAT_SCHEDULE.items()
    },
    PROBE: PROBE_ENTRY,
}
# The tasks a lost host had taken and not acknowledged go to another worker 10 s later instead of an hour (Redis's
# visibility timeout, looked for every second), within the drill, and after the sweeper gave their emails to another
# worker (5 s of publish grace or 6 s of lease, swept every 2 s): only the claims keep them from being sent twice. Tasks that wait
# longer in a living worker are handed out again too, which the claims must also stand.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 10,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
