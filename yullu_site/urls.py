from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from .monitoring.views import MetricsView, status_view

urlpatterns = [
    # The site's front page is the admin (review, stats, settings); the API lives under /api.
    path("", RedirectView.as_view(pattern_name="admin:index"), name="home"),
    path("favicon.ico", RedirectView.as_view(url="/static/yullu/favicon.svg", permanent=True)),  # non-HTML clients
    path("api/status", status_view, name="status"),
    path("api/schema", SpectacularAPIView.as_view(), name="schema"),
    path("api/", include("memories.urls")),
    path("api/", include("dreaming.urls")),
    path("api/", include("sync.urls")),
    path("api/", include("access.urls")),
    path("admin/", admin.site.urls),
    path("metrics", MetricsView.as_view(), name="metrics"),
]

handler404 = "yullu_core.api_errors.not_found"
handler500 = "yullu_core.api_errors.server_error"
