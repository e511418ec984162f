from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.generic import TemplateView

from accounts import views

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    # Logging out ends on a page that says so, rather than on a login form that looks like nothing happened.
    path("logout/", auth_views.LogoutView.as_view(next_page="logged_out"), name="logout"),
    path("logged-out/", TemplateView.as_view(template_name="registration/logged_out.html"), name="logged_out"),
    path("password/", views.PasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
]
