"""Output serializers of the billing shapes (docs/billing.md), with explicit camelCase names: each writes the
records `billing.services` and `billing.provider` return, and is their schema. The account endpoints that answer
with them take them from here."""

from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.serializers import OutputSerializer


class CategoryUsageSerializer(OutputSerializer):
    limit = serializers.IntegerField(allow_null=True, help_text="Emails per calendar month (UTC); null: no cap")
    usage = serializers.IntegerField(help_text="Emails created this month")
    percentage = serializers.FloatField(help_text="usage / limit x 100, two decimals; 0 without a cap")
    isWarning = serializers.BooleanField(source="is_warning", help_text="At least 80 % of the cap used")
    isBlocked = serializers.BooleanField(source="is_blocked", help_text="The cap is reached: sends are refused")


class BillingLimitsSerializer(OutputSerializer):
    transactional = CategoryUsageSerializer()
    campaigns = CategoryUsageSerializer()
    workflows = CategoryUsageSerializer()
    inbound = CategoryUsageSerializer()


class BillingLimitsInputSerializer(serializers.Serializer):
    # Documents the PUT body; `billing.services.billing_limits_update` checks the values (strictly, with the
    # field name in each error).
    transactional = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    campaigns = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    workflows = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    inbound = serializers.IntegerField(min_value=1, allow_null=True, required=False)


class EmailConsumptionSerializer(OutputSerializer):
    transactional = serializers.IntegerField()
    campaigns = serializers.IntegerField()
    workflows = serializers.IntegerField()
    inbound = serializers.IntegerField()
    total = serializers.IntegerField()


class BillingConsumptionSerializer(OutputSerializer):
    periodStart = IsoDateTimeField(source="period_start", help_text="First moment of this calendar month (UTC)")
    periodEnd = IsoDateTimeField(source="period_end", help_text="First moment of the next month (exclusive)")
    emails = EmailConsumptionSerializer()


class RedirectSerializer(OutputSerializer):
    url = serializers.CharField(help_text="Send the user's browser here")


class InvoiceSerializer(OutputSerializer):
    id = serializers.CharField()
    number = serializers.CharField(allow_null=True)
    status = serializers.CharField(allow_null=True, help_text="draft, open, paid, uncollectible or void")
    currency = serializers.CharField()
    amountDue = serializers.IntegerField(source="amount_due", help_text="In the currency's smallest unit")
    amountPaid = serializers.IntegerField(source="amount_paid", help_text="In the currency's smallest unit")
    createdAt = IsoDateTimeField(source="created_at")
    periodStart = IsoDateTimeField(source="period_start", allow_null=True)
    periodEnd = IsoDateTimeField(source="period_end", allow_null=True)
    hostedInvoiceUrl = serializers.CharField(source="hosted_url", allow_null=True)
    invoicePdf = serializers.CharField(source="pdf_url", allow_null=True)


class InvoicesSerializer(OutputSerializer):
    invoices = InvoiceSerializer(many=True)


class WebhookReceivedSerializer(OutputSerializer):
    received = serializers.BooleanField()
    applied = serializers.BooleanField(help_text="False for a redelivered event or one that changes no subscription")
