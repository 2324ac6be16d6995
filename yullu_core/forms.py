"""Admin form helpers the apps share."""

from __future__ import annotations

from django import forms


def untrimmed(form: forms.BaseForm, name: str = "project_id") -> None:
    """Let the field's clean method see the text as pasted: Django trims a CharField before it, so a trailing
    newline or tab went unseen by refuse_id_control, the check every other path makes. A form without the
    field (the change list's own) is left as it is."""
    if isinstance(field := form.fields.get(name), forms.CharField):
        field.strip = False
