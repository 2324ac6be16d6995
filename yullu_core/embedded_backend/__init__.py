"""Django's PostgreSQL backend for the embedded server (ENGINE = "yullu_core.embedded_backend")."""
