"""The admin (the review UI): the site itself with its sidebar (site.py) and the pages that span
apps (views.py: the dashboard and the projects page). Each app's own pages are in its admin.py."""
