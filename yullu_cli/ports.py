"""The web process's port: can it be listened on (checked before anything starts), and, when the
web process exits, did another process take it after that check (a port race, which no restart fixes)."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import time

PORT_PATIENCE_S = 10.0  # how long a port still held by a server that is stopping may take to free
SETTLE_S = 2.0  # how long a port held by no process this user can see may take to free after the web exits


def wait_to_listen(host: str, port: int) -> str | None:
    """`cannot_listen`, waiting a little while the port is in use: a supervisor killed with -9
    takes its web child with it, but the child may still hold the port for a moment while it
    exits (seen under load: the next `yullu serve` refused a port that was free a second later)."""
    deadline = time.monotonic() + PORT_PATIENCE_S
    while (problem := cannot_listen(host, port)) and "already in use" in problem and time.monotonic() < deadline:
        time.sleep(0.25)
    return problem


def cannot_listen(host: str, port: int) -> str | None:
    """One sentence saying why the web process could not listen on host:port and what to change,
    or None. Found out by binding it once, as uvicorn will (SO_REUSEADDR, so connections left by a
    server that just stopped do not count); otherwise it only shows as the web child's crash loop."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        socket.create_server(address, family=family).close()
    except socket.gaierror as exc:
        return f"cannot listen on {host}: it does not resolve ({exc.strerror}); fix [server].host in {_config()}."
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} on {host} is already in use; stop what uses it, or pick another port with {_change()}."
        return f"cannot listen on port {port} on {host} ({exc.strerror}); pick another port with {_change()}."
    return None


def taken_since(host: str, port: int, ours: int) -> str | None:
    """The sentence for a web process that exited because another process took its port after the
    start-up check, or None. uvicorn logs the bind error and exits, aborted (SIGABRT) by a native
    thread still loading at exit: the supervisor said "killed by SIGABRT" and restarted it into the
    same wall four times. Sockets of the exited web process's own group (`ours`, being killed) are
    no one else's; a holder this user cannot see is named so once the port stayed taken SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    while cannot_listen(host, port) is not None:
        holders = _listeners(port)
        if others := [pid for pid in holders if pid is not None and not _in_group(pid, ours)]:
            return _taken(host, port, f"another process ({_names(others)})")
        if time.monotonic() > deadline:
            return _taken(host, port, "a process this user cannot see") if None in holders else None
        time.sleep(0.25)
    return None


def _taken(host: str, port: int, by: str) -> str:
    return (
        f"port {port} on {host} was taken by {by} after `yullu serve` found it free, so the web process could not "
        f"listen; stop that process, or pick another port with {_change()}"
    )


def _listeners(port: int) -> list[int | None]:
    """The pids listening on TCP `port` (any address); None for a socket whose process this user cannot see."""
    import psutil

    with contextlib.suppress(psutil.Error, OSError):
        return [
            c.pid
            for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
        ]
    return []


def _in_group(pid: int, group: int) -> bool:
    try:
        return os.getpgid(pid) == group
    except OSError:  # gone meanwhile: it was on its way out, not holding the port for good
        return True


def _names(pids: list[int]) -> str:
    import psutil

    named = []
    for pid in sorted(set(pids)):
        with contextlib.suppress(psutil.Error):
            named.append(f"pid {pid}, {psutil.Process(pid).name()}")
            continue
        named.append(f"pid {pid}")
    return "; ".join(named)


def _config() -> str:
    from yullu_core.config import config_path

    return str(config_path())


def _change() -> str:
    return f"`yullu serve --port N`, YULLU_PORT=N or [server].port in {_config()}"
