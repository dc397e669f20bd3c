"""A real TCP proxy on loopback that breaks connections on purpose: it forwards bytes
between the SDK and the server and, after a set number of bytes in one direction, resets
both sides (SO_LINGER 0: the peer sees a reset, as when a network path dies). Used to
interrupt real transfers; it counts what it forwarded so a test can tell a resumed transfer
(about the file's size on the wire) from one that started over."""

import socket
import struct
import threading
from typing import List


class BreakingProxy:
    def __init__(
        self,
        upstream: str,
        cut_up: List[int] = (),
        cut_down: List[int] = (),
        die_after_cut: bool = False,
    ) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        #: Cumulative client->server / server->client byte counts at which to cut.
        self.cut_up = sorted(cut_up)
        self.cut_down = sorted(cut_down)
        self.up = 0
        self.down = 0
        self.cuts = 0
        #: After the first cut, reset every connection at once (a server that is gone).
        self.die_after_cut = die_after_cut
        self.refused = 0
        self._lock = threading.Lock()
        self._srv = socket.create_server(("127.0.0.1", 0))
        self.port = self._srv.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stop:
            try:
                c, _ = self._srv.accept()
            except OSError:
                return
            if self.die_after_cut and self.cuts:
                self.refused += 1
                self._reset(c)
                continue
            try:
                u = socket.create_connection(self.upstream)
            except OSError:
                c.close()
                continue
            pair = {"dead": False}
            threading.Thread(target=self._pump, args=(c, u, True, pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False, pair), daemon=True).start()

    def _reset(self, *socks) -> None:
        # Linger 0: the last close sends a reset. shutdown() first, because the other
        # direction's thread is blocked in recv() on the same socket, which holds the file
        # open (a close alone would neither wake it nor reach the peer).
        for s in socks:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _pump(self, src, dst, up: bool, pair) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data or pair["dead"]:
                break
            with self._lock:
                cuts = self.cut_up if up else self.cut_down
                before = self.up if up else self.down
                limit = cuts[0] if cuts else None
                if limit is not None and before + len(data) >= limit:
                    data = data[: max(0, limit - before)]
                    cuts.pop(0)
                    cut = True
                else:
                    cut = False
                if up:
                    self.up += len(data)
                else:
                    self.down += len(data)
            try:
                if data:
                    dst.sendall(data)
            except OSError:
                break
            if cut:
                with self._lock:
                    self.cuts += 1
                pair["dead"] = True
                self._reset(src, dst)
                return
        pair["dead"] = True
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._stop = True
        self._srv.close()
