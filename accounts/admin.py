from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from accounts.models import ApiToken, User
from accounts.services import account_erase


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    list_display = ("username", "email", "memory_enabled", "is_staff", "date_joined")
    list_filter = ("memory_enabled", *BaseUserAdmin.list_filter)
    fieldsets = (*(BaseUserAdmin.fieldsets or ()), (_("Memory"), {"fields": ("memory_enabled",)}))

    # Deleting a user here deletes the account the way Settings → Account does (every app's eraser).
    def delete_model(self, request: HttpRequest, obj: User) -> None:
        account_erase(user=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        for user in queryset:
            account_erase(user=user)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "expires_at")
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")
    list_select_related = ("user",)

    def has_add_permission(self, request: object) -> bool:  # tokens are created with create_api_token
        return False
