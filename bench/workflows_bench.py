"""The workflow engine's costs, on PostgreSQL + Redis (docs/performance.md, the workflow rows).

- `overhead`: `POST /v1/track` through the WSGI application in this process (as bench/fastroute_inprocess.py),
  for a project without workflows and for one with 20 enabled workflows none of whose triggers (nor WAIT_FOR_EVENT
  steps) match, rounds alternating, in the same run: the cost of the event hook's "does this concern a workflow?".
- `starts`: N contacts each track the trigger of an enabled TRIGGER -> SEND_EMAIL workflow (in this process, through
  the fast route), a Celery worker runs the executions: how long after the last accepted event the last email is
  queued, and that each contact got exactly one execution and one email.
- `resumes`: N executions WAITING in a DELAY that ends at the same moment T, then UPDATE_CONTACT; at T the sweep is
  published (as celery-beat does, every 15 s): how long until every execution has done its next step, none twice.

    python bench/workflows_bench.py overhead [--calls 2000] [--rounds 5]
    python bench/workflows_bench.py starts [--count 10000] [--concurrency 2]
    python bench/workflows_bench.py resumes [--count 10000] [--concurrency 2]

Database `hworkflowsbench` (made afresh) and Redis db 4 (cache and broker) unless `--database` / `--redis-db`; the
Redis server is `BENCH_REDIS` (`bench.serve`).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.serve import REDIS, bench_env, fresh_database, manage, setup_project, wsgi_environ

SINK_PORT = 2626


def track(application, key: str, emails, event: str) -> tuple[float, float]:
    """Track `event` for each address through the WSGI application; (wall seconds, CPU seconds of this thread). The
    thread's CPU leaves out the database and Redis servers, so it is steadier than the wall on a busy machine."""
    statuses = []

    def start_response(status, headers, exc_info=None):
        statuses.append(status)

    started, cpu = time.perf_counter(), time.thread_time()
    for email in emails:
        body = json.dumps({"email": email, "event": event}).encode()
        b"".join(
            application(
                wsgi_environ("POST", "/v1/track", {"HTTP_AUTHORIZATION": f"Bearer {key}"}, body), start_response
            )
        )
    elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
    assert set(statuses) == {"200 OK"}, set(statuses)
    return elapsed, cpu


def _setup(args, **extra) -> tuple[dict, dict]:
    fresh_database(args.database)
    env = bench_env(args.database, API_RATE_LIMIT_PER_MINUTE="100000000", **extra)
    env.update(CACHE_URL=f"{REDIS}/{args.redis_db}", CELERY_BROKER_URL=f"{REDIS}/{args.redis_db}")
    subprocess.run(["redis-cli", "-n", str(args.redis_db), "FLUSHDB"], check=True, capture_output=True)
    keys = setup_project(env)
    os.environ.update(env)
    import django

    django.setup()
    return env, keys


def _project(name: str):
    from accounts.models import Project

    return Project.objects.get(name=name)


def _workflow(project, name: str, event: str, steps: list[tuple[str, dict]]):
    from workflows import services

    workflow = services.workflow_create(project=project, name=name, event_name=event)
    for step_type, config in steps:
        services.step_add(workflow=workflow, step_type=step_type, config=config)
    services.workflow_update(workflow=workflow, enabled=True)
    return workflow


def _template(project, sender: str = "hi@bench.test"):
    from messaging.models import EmailType, Template

    return Template.objects.create(
        project=project, name="Welcome", subject="Welcome {{ email }}", body="<p>Hello {{ email }}</p>",
        from_email=sender, type=EmailType.TRANSACTIONAL,
    )  # fmt: skip


# overhead ---------------------------------------------------------------------------------------------------------


def _twin(env: dict, name: str) -> dict:
    """A project made as the bench's own is, with a template: the two differ only in what the caller adds."""
    keys = json.loads(
        manage(
            env,
            "create_project",
            "--name",
            name,
            "--owner-email",
            f"{name}@bench.test",
            "--verified-domain",
            f"{name}.test",
            "--json",
        )
    )
    _template(_project(name), f"hi@{name}.test")
    return keys


def _hook_cost(project, calls: int = 20000) -> float:
    """CPU microseconds of the workflows' event receiver for one non-matching event, called directly."""
    from contacts.models import Contact, Event
    from workflows.receivers import on_events_recorded

    event = Event(project=project, contact=Contact.objects.filter(project=project).first(), name="signup", data={})
    on_events_recorded(Event, project=project, events=[event])
    cpu = time.thread_time()
    for _ in range(calls):
        on_events_recorded(Event, project=project, events=[event])
    return (time.thread_time() - cpu) / calls * 1e6


def overhead(args) -> dict:
    env, _ = _setup(args)
    quiet_keys, busy_keys = _twin(env, "quiet"), _twin(env, "busy")
    busy = _project("busy")
    template = busy.templates.get()
    for n in range(20):
        steps = [("SEND_EMAIL", {"templateId": str(template.id)}), ("WAIT_FOR_EVENT", {"eventName": f"paid-{n}"})]
        _workflow(busy, f"W{n}", f"other-{n}", steps)
    from config.wsgi import application

    cases = {"no workflows": quiet_keys["publicKey"], "20 workflows, none matching": busy_keys["publicKey"]}
    emails = [f"t{n % 500}@bench.test" for n in range(args.calls)]
    for key in cases.values():
        track(application, key, emails[:200], "signup")  # warm-up: caches, prepared statements, contacts
    runs = {name: [] for name in cases}
    for round_ in range(args.rounds):
        # Alternating which goes first, so neither always runs on a warmer or quieter machine.
        for name, key in list(cases.items())[:: 1 if round_ % 2 == 0 else -1]:
            runs[name].append(track(application, key, emails, "signup"))
    from workflows.models import WorkflowExecution

    assert not WorkflowExecution.objects.exists()
    wall = {name: args.calls / statistics.median(r[0] for r in rounds) for name, rounds in runs.items()}
    cpu = {name: statistics.median(r[1] for r in rounds) / args.calls * 1e6 for name, rounds in runs.items()}
    quiet, busy_name = cases
    return {
        "calls_per_round": args.calls,
        "rounds": args.rounds,
        "tracks_per_second_wall": {name: round(rate, 1) for name, rate in wall.items()},
        "wall_ratio": round(wall[busy_name] / wall[quiet], 3),
        "cpu_us_per_track": {name: round(us) for name, us in cpu.items()},
        "cpu_ratio": round(cpu[quiet] / cpu[busy_name], 3),
        "hook_cpu_us_per_event": {
            "no workflows": round(_hook_cost(_project("quiet")), 2),
            "20 workflows, none matching": round(_hook_cost(busy), 2),
        },
        "rounds_wall_seconds": {name: [round(r[0], 2) for r in rounds] for name, rounds in runs.items()},
    }


# starts -----------------------------------------------------------------------------------------------------------


def _sink() -> subprocess.Popen:
    return subprocess.Popen(
        ["/usr/sbin/smtp-sink", "-u", "nobody", f"127.0.0.1:{SINK_PORT}", "1024"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def starts(args) -> dict:
    env, keys = _setup(args, EMAIL_URL=f"smtp://127.0.0.1:{SINK_PORT}")
    from django.db.models import Count

    from config.tests.processes import celery_worker
    from config.wsgi import application
    from messaging.models import Email
    from workflows.models import WorkflowExecution

    project = _project("Bench")
    workflow = _workflow(project, "Welcome", "signup", [("SEND_EMAIL", {"templateId": str(_template(project).id)})])
    emails = [f"c{n}@bench.test" for n in range(args.count)]
    sink = _sink()
    worker_env = {key: env[key] for key in ("CACHE_URL", "CELERY_BROKER_URL", "EMAIL_URL")}
    try:
        with celery_worker(concurrency=args.concurrency, **worker_env):
            time.sleep(4)  # worker start-up is not the engine
            started = time.perf_counter()
            tracking, _ = track(application, keys["publicKey"], emails, "signup")
            last_event = time.perf_counter()
            queued = Email.objects.filter(workflow_id=workflow.id)
            while queued.count() < args.count and time.perf_counter() - last_event < 600:
                time.sleep(0.25)
            done = time.perf_counter()
    finally:
        sink.terminate()
    per_contact = set(
        WorkflowExecution.objects.filter(workflow=workflow)
        .values("contact_id")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    emails_per_contact = set(queued.values("contact_id").annotate(n=Count("id")).values_list("n", flat=True))
    return {
        "contacts": args.count,
        "tracking_seconds": round(tracking, 1),
        "tracks_per_second": round(args.count / tracking, 1),
        "executions": WorkflowExecution.objects.filter(workflow=workflow).count(),
        "executions_per_contact": sorted(per_contact),
        "emails_queued": queued.count(),
        "emails_per_contact": sorted(emails_per_contact),
        "last_email_queued_after_last_event_seconds": round(done - last_event, 1),
        "first_event_to_last_email_seconds": round(done - started, 1),
    }


# resumes ----------------------------------------------------------------------------------------------------------


def resumes(args) -> dict:
    env, _ = _setup(args)
    from datetime import timedelta

    from django.utils import timezone

    from config.celery import app
    from config.tests.processes import celery_worker
    from contacts.models import Contact
    from workflows.models import StepType, WorkflowExecution, WorkflowStepExecution

    project = _project("Bench")
    workflow = _workflow(
        project,
        "Nurture",
        "signup",
        [("DELAY", {"amount": 1, "unit": "days"}), ("UPDATE_CONTACT", {"updates": {"nurtured": True}})],
    )
    delay = workflow.steps.get(type=StepType.DELAY)
    contacts = Contact.objects.bulk_create(
        [Contact(project=project, email=f"w{n}@bench.test") for n in range(args.count)], batch_size=2000
    )
    # What the engine records for an execution paused in its DELAY (workflows.engine.outcomes_record); T is set below.
    later = timezone.now() + timedelta(days=1)
    executions = [
        WorkflowExecution(
            project=project,
            workflow=workflow,
            contact=contact,
            status="WAITING",
            current_step=delay,
            resume_at=later,
        )
        for contact in contacts
    ]
    WorkflowExecution.objects.bulk_create(executions, batch_size=2000)
    WorkflowStepExecution.objects.bulk_create(
        [
            WorkflowStepExecution(
                execution=execution, step=delay, status="SCHEDULED", scheduled_for=later, started_at=timezone.now()
            )
            for execution in executions
        ],
        batch_size=2000,
    )
    worker_env = {key: env[key] for key in ("CACHE_URL", "CELERY_BROKER_URL")}
    with celery_worker(concurrency=args.concurrency, **worker_env):
        time.sleep(4)  # worker start-up
        moment = timezone.now() + timedelta(seconds=args.lead)
        WorkflowExecution.objects.filter(workflow=workflow).update(resume_at=moment)
        WorkflowStepExecution.objects.filter(step=delay).update(scheduled_for=moment)
        time.sleep(max(0.0, (moment - timezone.now()).total_seconds()))
        started = time.perf_counter()
        app.send_task("workflows.tasks.sweep_executions_task")  # celery-beat's entry, at T
        finished = WorkflowExecution.objects.filter(workflow=workflow, status="COMPLETED")
        while finished.count() < args.count and time.perf_counter() - started < 600:
            time.sleep(0.25)
        elapsed = time.perf_counter() - started
    updates = WorkflowStepExecution.objects.filter(execution__workflow=workflow, step__type=StepType.UPDATE_CONTACT)
    return {
        "executions": args.count,
        "completed": finished.count(),
        "seconds_from_T": round(elapsed, 1),
        "executions_per_second": round(finished.count() / elapsed, 1),
        "update_steps": updates.count(),
        "update_steps_completed": updates.filter(status="COMPLETED").count(),
        "contacts_updated": Contact.objects.filter(project=project, data__nurtured=True).count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["overhead", "starts", "resumes"])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--lead", type=float, default=2.0, help="seconds from setting T to T")
    parser.add_argument("--database", default="hworkflowsbench")
    parser.add_argument("--redis-db", type=int, default=4)
    args = parser.parse_args()
    result = {"overhead": overhead, "starts": starts, "resumes": resumes}[args.what](args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
