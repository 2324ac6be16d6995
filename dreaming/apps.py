from django.apps import AppConfig


class DreamingConfig(AppConfig):
    name = "dreaming"
    verbose_name = "Dreaming"

    def ready(self) -> None:
        # The review queue shows why a pass proposed each memory; memories never imports dreaming.
        from memories.origins import register_explainer

        from .origins import explain

        register_explainer(explain)
