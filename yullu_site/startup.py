"""Work done once when a web process starts: warm the embedder and the tokenizer, reconcile known projects."""

from __future__ import annotations

import asyncio
import logging
import threading

log = logging.getLogger(__name__)


def _warm_embedder() -> None:
    from django.db import close_old_connections

    from memories.embedding.embedders import warm_up
    from memories.search.gates import warm_up_gate

    try:
        warm_up()
        warm_up_gate()
    except Exception as exc:
        log.warning("embedder warm-up failed: %s", exc)
    finally:
        close_old_connections()


def _warm_tokenizer() -> None:
    """Load build_context's tokenizer now (~0.5 s), not in the first prompt hook's 1.5 s window;
    and the secret scanner's rules and confusables table (0.1-0.4 s), not in the first store."""
    from memories.secrets import find_secret
    from yullu_core.tokens import count_tokens

    try:
        count_tokens("warm up")
        find_secret("warm up, with a non-ASCII letter: \u0430")
    except Exception as exc:
        log.warning("tokenizer warm-up failed: %s", exc)


def _reconcile_on_start() -> None:
    from django.conf import settings
    from django.db import connection

    if not settings.YULLU["sync"]["auto_reconcile_on_startup"]:
        return
    try:
        from sync.tasks import reconcile_all_known

        reconcile_all_known.delay()
    except Exception as exc:
        log.warning("could not queue start-up reconcile: %s", exc)
    finally:
        connection.close()


async def on_startup() -> None:
    """Runs in the background so the server answers /api/status (ready: false) at once."""
    threading.Thread(target=_warm_embedder, name="embedder-warmup", daemon=True).start()
    threading.Thread(target=_warm_tokenizer, name="tokenizer-warmup", daemon=True).start()
    await asyncio.to_thread(_reconcile_on_start)
