"""A TCP gate in front of a real PostgreSQL: a database outage without stopping the test database.

`cut()` closes every connection through the gate and refuses new ones (a server that went away);
`restore()` takes connections again on the same port (the server is back). `freeze()` keeps every
connection open, new ones too, and passes nothing on until `thaw()`: a PostgreSQL stopped with SIGSTOP
and then SIGCONT, as the client sees it (its kernel still takes the bytes; nothing comes back)."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpGate:
    def __init__(self, upstream: str | tuple[str, int]) -> None:
        self.upstream = upstream  # a unix socket's path, or (host, port)
        self.port = 0
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._flowing = threading.Event()
        self._flowing.set()
        self.restore()

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, []
        for sock in [s for s in (listener,) if s is not None] + sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.upstream, str):
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            up.connect(self.upstream)
            return up
        return socket.create_connection(self.upstream)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                up = self._connect_upstream()
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    up.close()
                    return
                self._open += [client, up]
            for a, b in ((client, up), (up, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                self._flowing.wait()  # frozen: held here, and the sender's further bytes in the socket buffers
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
