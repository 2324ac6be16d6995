from django.urls import path

from .api import ReconcileView

urlpatterns = [path("reconcile", ReconcileView.as_view(), name="reconcile")]
