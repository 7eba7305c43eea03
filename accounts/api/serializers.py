from rest_framework import serializers

from accounts.models import Membership, Project
from core.http.fields import IsoDateTimeField
from core.http.serializers import OutputSerializer


class CredentialsInputSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class SignupInputSerializer(CredentialsInputSerializer):
    # The invitation token of the sign-up link, when an invitation brought the user here.
    token = serializers.CharField(max_length=2000, required=False, allow_blank=True)


class TokenInputSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=2000)


class ResetPasswordInputSerializer(TokenInputSerializer):
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class EmailInputSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)


class UserOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    emailVerified = serializers.BooleanField(source="email_verified")
    createdAt = IsoDateTimeField(source="date_joined")


class UserEnvelopeSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    data = serializers.DictField(child=UserOutputSerializer())


class SuccessSerializer(serializers.Serializer):
    success = serializers.BooleanField()


class ProviderSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()


class OAuthConfigSerializer(serializers.Serializer):
    github = ProviderSerializer()
    google = ProviderSerializer()


class ProjectCreateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)


class ProjectUpdateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    trackingMode = serializers.ChoiceField(choices=Project.TrackingMode.choices, required=False, source="tracking_mode")


class ProjectOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    publicKey = serializers.CharField(source="public_key")
    disabled = serializers.BooleanField()
    defaultSenderDomain = serializers.CharField(source="default_sender_domain", allow_null=True)
    createdAt = IsoDateTimeField(source="created_at")


class ProjectDetailOutputSerializer(ProjectOutputSerializer):
    trackingMode = serializers.ChoiceField(choices=Project.TrackingMode.choices, source="tracking_mode")
    # For an ADMIN or the OWNER only (null for a MEMBER).
    webhookSecret = serializers.CharField(source="webhook_secret", allow_null=True)


class ProjectCreatedOutputSerializer(ProjectDetailOutputSerializer):
    # Shown once: only its hash is kept.
    secretKey = serializers.CharField(source="secret_key")


class KeysOutputSerializer(OutputSerializer):
    publicKey = serializers.CharField(source="public_key")
    secretKey = serializers.CharField(source="secret_key")


class MemberInputSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class MemberUpdateInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MemberOutputSerializer(OutputSerializer):
    userId = serializers.UUIDField(source="user_id")
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    createdAt = IsoDateTimeField(source="created_at")


class MemberAddedOutputSerializer(MemberOutputSerializer):
    userId = serializers.UUIDField(source="user_id", allow_null=True)
    # `active`: an existing user, a member now; `invited`: an invitation was mailed to the address.
    status = serializers.CharField(help_text="active or invited")


class InvitationOutputSerializer(OutputSerializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)
    invitedAt = IsoDateTimeField(source="created_at")
    # When its latest link stops working; sending it again (the admin) starts a new period.
    expiresAt = IsoDateTimeField(source="expires_at")


class SetupStateSerializer(serializers.Serializer):
    hasVerifiedDomain = serializers.BooleanField()
    contactCount = serializers.IntegerField()
    hasTemplate = serializers.BooleanField()
    lastCampaignSentAt = serializers.CharField(allow_null=True)
    hasEnabledWorkflow = serializers.BooleanField()
    hasSubscription = serializers.BooleanField()
