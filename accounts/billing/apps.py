from django.apps import AppConfig


class BillingConfig(AppConfig):
    # Its own app (label `billing`, tables `billing_*`) inside accounts: caps and subscriptions are the project's.
    name = "accounts.billing"
    label = "billing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.billing.services import project_has_subscription
        from accounts.tenancy.registry import setup_facts

        setup_facts.register(project_has_subscription, key="hasSubscription")
