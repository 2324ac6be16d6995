"""CPU of the access check (issue 28), A/B in one run, rounds alternating: the same loop with no
check, `access.policy.require()` as a superuser (the single-user owner: answered from the actor, no
query), as a user with a grant (one prepared statement), and the list filter's `visible_projects()`.
Process CPU (time.process_time: the web process's own share; the database's is not in it) and wall
time per call. docs/benchmarks.md, "The access check (issue 28)".

Run in a scratch home (it adds a user, a project and a grant):
    YULLU_HOME=... python manage.py shell -c "from bench.access_check import main; main()"
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from django.contrib.auth import get_user_model

from access import policy, services
from access.actor import Actor, acting_as

PROJECT = "bench/access-check"
CALLS = 2000
ROUNDS = 7


def _per_call(fn: Callable[[], object], actor: Actor) -> tuple[float, float]:
    with acting_as(actor):
        fn()  # warm: connection, prepared statement
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(CALLS):
            fn()
        return (time.process_time() - cpu) / CALLS * 1e6, (time.perf_counter() - wall) / CALLS * 1e6


def main() -> None:
    user, _ = get_user_model().objects.get_or_create(username="bench-reader")
    services.grant("bench-reader", PROJECT, "read", create=True)
    owner = Actor(None, "system", is_superuser=True)
    reader = Actor(user.pk, user.get_username(), is_superuser=False)
    cases: dict[str, tuple[Callable[[], object], Actor]] = {
        "no check (loop only)": (lambda: None, reader),
        "require, superuser": (lambda: policy.require(PROJECT, policy.READ), owner),
        "require, granted user": (lambda: policy.require(PROJECT, policy.READ), reader),
        "visible_projects, granted user": (lambda: policy.visible_projects(), reader),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, (fn, actor) in cases.items():
            results[name].append(_per_call(fn, actor))
    print(f"{CALLS} calls x {ROUNDS} alternating rounds; median (min-max) per call")
    for name, runs in results.items():
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        print(
            f"{name:32} CPU {statistics.median(cpu):7.1f} us ({min(cpu):.1f}-{max(cpu):.1f})"
            f"   wall {statistics.median(wall):7.1f} us ({min(wall):.1f}-{max(wall):.1f})"
        )
