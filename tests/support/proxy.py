"""A TCP proxy in front of the test server that can "restart" it: stop() closes every
connection and the listening port (what a client sees when the server process goes away),
start() listens again on the same port (the server is back). hold() stops forwarding, so a
request can be caught in flight: the restart then happens mid-query."""

from __future__ import annotations

import select
import socket
import threading
from contextlib import suppress


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()
        self.held = threading.Event()  # set: bytes are kept, not forwarded
        self.caught = threading.Event()  # set: bytes arrived while held
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.held.clear()
        self.caught.clear()
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
            listener, self._listener = self._listener, None
        for sock in [*sockets, *([listener] if listener else [])]:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def hold(self) -> None:
        self.caught.clear()
        self.held.set()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        peers = {client: upstream, upstream: client}
        while True:
            try:
                readable, _, _ = select.select(list(peers), [], [], 0.5)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        raise OSError("closed")
                    if self.held.is_set():
                        self.caught.set()  # swallowed: the request never arrives
                        continue
                    peers[sock].sendall(data)
            except (OSError, ValueError):
                for sock in peers:
                    with suppress(OSError):
                        sock.close()
                return
