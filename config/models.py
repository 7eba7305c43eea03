from django.db import models


class Lease(models.Model):
    """The right of one process among several to do a job alone, for a while: celery-beat's lease (`config.beat`)
    makes one of the beats the scheduler. Taken, renewed and released by `config.leases`, on the database's clock."""

    name = models.CharField(max_length=50, primary_key=True)
    # host:pid:random of the process that holds (or last held) it; kept after it expires, to say who it was.
    holder = models.CharField(max_length=255, blank=True)
    acquired_at = models.DateTimeField("since", null=True, help_text="When its holder took it.")
    renewed_at = models.DateTimeField("last renewal", null=True)
    expires_at = models.DateTimeField("expires", null=True, help_text="Free for another process from then on.")

    def __str__(self):
        return self.name

    @property
    def host(self) -> str:
        return self.holder.rsplit(":", 2)[0]

    @property
    def pid(self) -> str:
        parts = self.holder.rsplit(":", 2)
        return parts[1] if len(parts) == 3 else ""
