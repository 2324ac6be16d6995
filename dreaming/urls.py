from django.urls import path

from . import api

urlpatterns = [
    path("messages", api.MessagesView.as_view(), name="messages"),
    path("dream", api.DreamView.as_view(), name="dream"),
    path("dream/passes", api.DreamPassesView.as_view(), name="dream-passes"),
]
