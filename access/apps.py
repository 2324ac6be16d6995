from django.apps import AppConfig


class AccessConfig(AppConfig):
    """People, tokens, projects and grants (SPEC §11): who may see and change which project."""

    name = "access"
    default_auto_field = "django.db.models.BigAutoField"
