from django.urls import path

from accounts.pages import views

# The paths of the account emails' links (accounts.identity.mail.PAGES).
urlpatterns = [
    path("verify-email", views.verify_email_page, name="page-verify-email"),
    path("reset-password", views.reset_password_page, name="page-reset-password"),
    path("signup", views.signup_page, name="page-signup"),
]
