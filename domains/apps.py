from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save
from django.test.signals import setting_changed


def _clear_dns_memory(*, setting: str, **kwargs) -> None:
    # Tests point the resolver at other servers; answers kept in process memory must not outlive that.
    if setting.startswith("DNS_"):
        from domains.dns import clear_local_cache

        clear_local_cache()


def _forget_senders(*, instance, **kwargs) -> None:
    from domains.authorized import forget_project

    forget_project(instance.project_id)


def _forget_all_senders(*, setting: str, **kwargs) -> None:
    if setting == "DOMAINS_SENDER_MEMORY_SECONDS":
        from domains.authorized import forget_all

        forget_all()


class DomainsConfig(AppConfig):
    name = "domains"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.tenancy.registry import default_sender_domain_finders, setup_facts
        from domains.models import Domain
        from domains.selectors import default_sender_domains, project_has_verified_domain

        setup_facts.register(project_has_verified_domain, key="hasVerifiedDomain")
        default_sender_domain_finders.register(default_sender_domains)

        setting_changed.connect(_clear_dns_memory, dispatch_uid="domains-dns-memory")
        setting_changed.connect(_forget_all_senders, dispatch_uid="domains-sender-memory-setting")
        # A change to a domain is seen at once by this process (others: domains.authorized says when).
        post_save.connect(_forget_senders, sender=Domain, dispatch_uid="domains-sender-memory-save")
        post_delete.connect(_forget_senders, sender=Domain, dispatch_uid="domains-sender-memory-delete")
