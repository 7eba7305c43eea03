from django.apps import AppConfig
from django.test.signals import setting_changed


def _clear_dns_memory(*, setting: str, **kwargs) -> None:
    # Tests point the resolver at other servers; answers kept in process memory must not outlive that.
    if setting.startswith("DNS_"):
        from domains.dns import clear_local_cache

        clear_local_cache()


class DomainsConfig(AppConfig):
    name = "domains"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        setting_changed.connect(_clear_dns_memory, dispatch_uid="domains-dns-memory")
