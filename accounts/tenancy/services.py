from django.db import transaction
from django.utils import timezone

from accounts.jobs.services import job_create, job_run
from accounts.models import Job, Membership, Project, User
from accounts.tenancy import keycache, registry, sessioncache
from accounts.tenancy.keys import KeyPair, generate_pair, hash_key
from core import crypto, standard_webhooks
from core.commit import after_commit


def _apply_keys(project: Project, keys: KeyPair) -> None:
    project.public_key = keys.public_key
    project.secret_key_hash = hash_key(keys.secret_key)
    project.secret_key_hint = keys.secret_key[-4:]
    project.keys_rotated_at = timezone.now()


@transaction.atomic
def project_create(*, name: str, owner: User) -> tuple[Project, KeyPair]:
    """Create a project with its owner membership; the secret key in the returned pair is never stored."""
    keys = generate_pair()
    project = Project(name=name.strip())
    _apply_keys(project, keys)
    project.full_clean()
    project.save()
    Membership.objects.create(user=owner, project=project, role=Membership.Role.OWNER)
    return project, keys


def project_auth_changed(*, project: Project) -> None:
    """Make every process re-read the project for its current keys and sessions (after a rename, disable, enable,
    delete)."""
    keycache.forget(hash_key(project.public_key), project.secret_key_hash)
    sessioncache.forget_project(project.pk)


def project_regenerate_keys(*, project: Project) -> KeyPair:
    """Replace both keys at once; the old ones fail on the very next request (no grace period)."""
    project_auth_changed(project=project)
    keys = generate_pair()
    _apply_keys(project, keys)
    project.save(update_fields=["public_key", "secret_key_hash", "secret_key_hint", "keys_rotated_at", "updated_at"])
    return keys


_WEBHOOK_SECRET_PURPOSE = b"herald/accounts/webhook-secret/v1"


def project_webhook_secret(*, project: Project) -> str:
    """The project's webhook signing secret (`whsec_…`), made on first use: projects are created without one, and
    the first of two concurrent first uses wins, so both sign with the same secret."""
    if not project.webhook_secret_encrypted:
        Project.objects.filter(pk=project.pk, webhook_secret_encrypted="").update(
            webhook_secret_encrypted=crypto.encrypt(
                _WEBHOOK_SECRET_PURPOSE, standard_webhooks.secret_generate().encode()
            )
        )
        project.refresh_from_db(fields=["webhook_secret_encrypted"])
    return crypto.decrypt(_WEBHOOK_SECRET_PURPOSE, project.webhook_secret_encrypted).decode("ascii")


def project_regenerate_webhook_secret(*, project: Project) -> str:
    """Replace the webhook secret; webhooks sent from now on are signed with the new one only."""
    secret = standard_webhooks.secret_generate()
    project.webhook_secret_encrypted = crypto.encrypt(_WEBHOOK_SECRET_PURPOSE, secret.encode())
    project.save(update_fields=["webhook_secret_encrypted", "updated_at"])
    return secret


def project_update(*, project: Project, values: dict) -> Project:
    """Rename a project or change its tracking mode (`name`, `tracking_mode` in `values`)."""
    fields = [name for name in ("name", "tracking_mode") if name in values]
    for name in fields:
        setattr(project, name, values[name].strip() if name == "name" else values[name])
    project.full_clean(exclude=["public_key", "secret_key_hash"])
    project.save(update_fields=[*fields, "updated_at"])
    project_auth_changed(project=project)
    return project


def project_delete(*, project: Project) -> None:
    project_auth_changed(project=project)
    project.delete()


PROJECT_RESET_JOB = "project_reset"


def project_reset_start(*, project: Project) -> Job:
    """Queue the wipe of a project's data (docs/accounts.md, "Reset"): a job, since a large project's rows take
    a while to delete; it reports its progress step by step."""
    from accounts.tenancy.tasks import project_reset_task

    job = job_create(project=project, type=PROJECT_RESET_JOB)
    after_commit(lambda: project_reset_task.delay(str(job.id)), what="queue a project reset (the sweeper re-queues it)")
    return job


def project_reset_run(*, job_id) -> Job | None:
    """Run the registered reset steps in order, one transaction and one checkpoint each, so a reset whose worker
    died resumes at the first step it had not finished."""

    def run(job: Job, report) -> dict:
        steps = registry.reset_steps()
        deleted = dict(job.result.get("deleted", {}))
        for index, step in enumerate(steps[job.checkpoint.get("next", 0) :], start=job.checkpoint.get("next", 0)):
            with transaction.atomic():
                deleted[step.name] = step.delete(job.project)
                report(int(100 * (index + 1) / len(steps)), {"deleted": deleted}, checkpoint={"next": index + 1})
        return {"deleted": deleted}

    return job_run(job_id, run)


def project_disable(*, project: Project, reason: str) -> None:
    project.disabled = True
    project.disabled_reason = reason[:100]
    project.disabled_at = timezone.now()
    project.save(update_fields=["disabled", "disabled_reason", "disabled_at", "updated_at"])
    project_auth_changed(project=project)


def project_enable(*, project: Project) -> None:
    project.disabled = False
    project.disabled_reason = ""
    project.disabled_at = None
    project.save(update_fields=["disabled", "disabled_reason", "disabled_at", "updated_at"])
    project_auth_changed(project=project)
