"""Yul'lu: persistent, searchable memory for AI coding assistants.

The Celery app is loaded by `YulluSiteConfig.ready()` rather than here, so that the
`yullu` hook commands (inject, record-turn) start without importing Celery or Django.
"""
