from django.urls import path

from . import api

urlpatterns = [
    path("access/users", api.UsersView.as_view(), name="access-users"),
    path("access/tokens", api.TokensView.as_view(), name="access-tokens"),
    path("access/tokens/<int:pk>", api.TokenDetail.as_view(), name="access-token"),
    path("access/grants", api.GrantsView.as_view(), name="access-grants"),
    path("access/grants/revoke", api.RevokeGrantView.as_view(), name="access-grant-revoke"),
]
