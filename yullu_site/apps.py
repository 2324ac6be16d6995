from django.apps import AppConfig


class YulluSiteConfig(AppConfig):
    name = "yullu_site"
    verbose_name = "Yul'lu site"
