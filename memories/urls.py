from django.urls import path

from . import api

urlpatterns = [
    path("memories", api.MemoryList.as_view(), name="memories"),
    path("memories/unrated", api.UnratedView.as_view(), name="memories-unrated"),
    path("memories/rejected", api.RejectedView.as_view(), name="memories-rejected"),
    path("memories/recall", api.RecallView.as_view(), name="memories-recall"),
    path("memories/<int:pk>", api.MemoryDetail.as_view(), name="memory-detail"),
    path("memories/<int:pk>/rate", api.RateView.as_view(), name="memory-rate"),
    path("context", api.ContextView.as_view(), name="context"),
    path("memories/<int:pk>/history", api.HistoryView.as_view(), name="memory-history"),
    path("memories/<int:pk>/links", api.LinkView.as_view(), name="memory-links"),
    path("conflicts", api.ConflictsView.as_view(), name="conflicts"),
    path("conflicts/<int:pk>/resolve", api.ResolveConflictView.as_view(), name="conflict-resolve"),
    path("recalls/feedback", api.RecallFeedbackView.as_view(), name="recall-feedback"),
    path("projects", api.ProjectsView.as_view(), name="projects"),
    path("stats", api.StatsView.as_view(), name="stats"),
    path("retrievals", api.RetrievalsView.as_view(), name="retrievals"),
    path("usage", api.UsageView.as_view(), name="usage"),
    path("usage/daily", api.UsageDailyView.as_view(), name="usage-daily"),
]
