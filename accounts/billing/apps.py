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

        from django.db.models.signals import post_delete, post_save
        from django.test.signals import setting_changed

        from accounts.billing.models import ProjectBilling
        from accounts.billing.usage import caps_forget

        # A cap set, raised or removed, or a subscription that ends the free tier's cap, applies at once in this
        # process; the others forget what they know within BILLING_UNCAPPED_CACHE_SECONDS.
        post_save.connect(caps_forget, sender=ProjectBilling, dispatch_uid="billing.caps_forget")
        post_delete.connect(caps_forget, sender=ProjectBilling, dispatch_uid="billing.caps_forget_delete")
        setting_changed.connect(caps_forget, dispatch_uid="billing.caps_forget_settings")
