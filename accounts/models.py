import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.utils import timezone


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra):
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who logs in by email: operators in the admin, members of projects."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200, blank=True)
    is_staff = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    date_joined = models.DateTimeField(default=timezone.now)
    # Set when the owner of the address followed the verification link (or an invitation sent to it).
    email_verified_at = models.DateTimeField(null=True, blank=True)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"

    def __str__(self) -> str:
        return self.email

    @property
    def email_verified(self) -> bool:
        return self.email_verified_at is not None


class Project(models.Model):
    """The tenant: every resource belongs to exactly one project, derived from the API key of a request."""

    class TrackingMode(models.TextChoices):
        ENABLED = "ENABLED"
        DISABLED = "DISABLED"
        # Marketing and headless mail only: transactional messages go out without pixel or rewritten links.
        MARKETING_ONLY = "MARKETING_ONLY"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    disabled = models.BooleanField(default=False)
    disabled_reason = models.CharField(max_length=100, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    tracking_mode = models.CharField(
        max_length=14,
        choices=TrackingMode.choices,
        default=TrackingMode.ENABLED,
        help_text="Open pixel and click tracking in HTML emails",
    )
    # The public key is published in browsers by design; the secret key exists only as its SHA-256.
    public_key = models.CharField(max_length=67, unique=True)
    secret_key_hash = models.CharField(max_length=64, unique=True)
    secret_key_hint = models.CharField(max_length=16, help_text="Last characters of the secret key")
    keys_rotated_at = models.DateTimeField(default=timezone.now)
    # Signs the workflows' webhooks; kept encrypted (core.crypto) since the service must read it back to sign.
    webhook_secret_encrypted = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "OWNER"
        ADMIN = "ADMIN"
        MEMBER = "MEMBER"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="membership_unique_user_project")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


# What each role may do includes everything the roles below it may (docs/accounts.md, "Roles").
ROLE_RANKS = {Membership.Role.MEMBER: 1, Membership.Role.ADMIN: 2, Membership.Role.OWNER: 3}


class Invitation(models.Model):
    """An address asked to join a project before it has an account: it joins when that address signs up with the
    invitation's link, verifies the address, or accepts the link while logged in (docs/accounts.md). Pending until
    `expires_at`; accepted or withdrawn, the row is gone."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # When its latest link was mailed (each sending makes a new one; until the first, when it was made).
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "email"], name="invitation_unique_project_email")]
        indexes = [models.Index(fields=["email"], name="invitation_email")]

    def __str__(self) -> str:
        return f"{self.email} to {self.project} ({self.role})"

    @property
    def expires_at(self):
        """When its latest link stops working (a link's token is good for INVITATION_TIMEOUT), and so the invitation
        with it: an expired invitation is neither listed nor joined, and inviting the address again replaces it."""
        return self.sent_at + timedelta(seconds=settings.INVITATION_TIMEOUT)


class IdempotencyRecord(models.Model):
    """A claimed `Idempotency-Key`: the unique constraint decides which of two concurrent requests does the work."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="idempotency_records")
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="idempotency_unique_project_key")]

    def __str__(self) -> str:
        return self.key


class Job(models.Model):
    """Queued bulk work (CSV import, bulk contact operations) with progress an integrator can poll."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        PROCESSING = "PROCESSING"
        COMPLETED = "COMPLETED"
        FAILED = "FAILED"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    type = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    progress = models.PositiveSmallIntegerField(default=0)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease of the worker running it, renewed with every reported step; a job whose lease expired lost its
    # worker and is taken over (accounts.jobs).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Where a taken-over job resumes: written in the same transaction as the work it describes.
    checkpoint = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "-created_at"], name="job_project_created"),
            # The sweeper's scan: unfinished jobs only.
            models.Index(
                fields=["status", "heartbeat_at"],
                name="job_unfinished",
                condition=models.Q(status__in=["PENDING", "PROCESSING"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.id}"

    @property
    def error_or_none(self) -> str | None:
        # The column is blank, not null, when nothing failed; the API says null.
        return self.error or None
