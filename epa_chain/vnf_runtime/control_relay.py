# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.


"""The generator's control socket, on the management address only.

PROX's own TCP listener (-t) binds port 8474 on every address, hard-coded
(input_conn.c), so it can honour neither "management address only" nor
the template's generator_control_port. PROX therefore listens only on its
UNIX socket (-u, /tmp/prox.sock, created under a 077 umask so only root
can use it), and this relay listens on the management address and port
and bound to the management interface, carrying bytes both ways: no
firewall rules, no tools the image would need.

Each client gets its own connection to PROX. When a client goes away the
relay keeps that PROX connection open a few seconds and drains it: PROX
writes replies with a plain write() and dies of SIGPIPE (or spins) if the
reader vanished mid-reply (see /work/shared/prox/README.md).
"""

import errno
import selectors
import socket
import threading
import time

PROX_SOCKET = '/tmp/prox.sock'
LINGER_S = 5.0
CLIENT_TIMEOUT_S = 10.0
MAX_CLIENTS = 8
BIND_WAIT_S = 120.0


class _Pair:

    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        self.close_at = None      # set once the client is gone


class ControlRelay:
    """TCP (management address:port) <-> PROX's UNIX socket."""

    def __init__(self, address, port, interface=None,
                 upstream_path=PROX_SOCKET, log=None):
        self.address = address
        self.port = port
        self.interface = interface
        self.upstream_path = upstream_path
        self.log = log or (lambda message: None)
        self._stop = threading.Event()
        self._thread = None
        self._listener = None
        self._pairs = []

    @property
    def bound(self):
        """(address, port) actually listened on."""
        return self._listener.getsockname()[:2] if self._listener else None

    def start(self, wait_s=BIND_WAIT_S, sleep=time.sleep):
        family = socket.AF_INET6 if ':' in self.address else socket.AF_INET
        waited = 0.0
        while True:
            listener = socket.socket(family, socket.SOCK_STREAM)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if self.interface:
                    listener.setsockopt(socket.SOL_SOCKET,
                                        socket.SO_BINDTODEVICE,
                                        self.interface.encode())
                listener.bind((self.address, self.port))
                listener.listen(MAX_CLIENTS)
                break
            except OSError as exc:
                listener.close()
                # The address may not be configured yet (DHCP, cloud-init).
                if exc.errno != errno.EADDRNOTAVAIL or waited >= wait_s:
                    raise
                sleep(1.0)
                waited += 1.0
        self._listener = listener
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve,
                                        name='control-relay', daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread:
            self._wake_w.send(b'x')
            self._thread.join(timeout=5)
            self._wake_r.close()
            self._wake_w.close()
            self._thread = None
        for pair in self._pairs:
            for sock in (pair.client, pair.upstream):
                if sock:
                    sock.close()
        self._pairs = []
        if self._listener:
            self._listener.close()
            self._listener = None

    def _serve(self):
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        selector.register(self._wake_r, selectors.EVENT_READ, 'wake')
        try:
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.5):
                    if key.data == 'wake':
                        continue
                    if key.data is None:
                        self._accept(selector)
                    else:
                        pair, from_client = key.data
                        self._relay(selector, pair, from_client)
                now = time.monotonic()
                for pair in list(self._pairs):
                    if pair.close_at is not None and now >= pair.close_at:
                        self._drop(selector, pair)
        finally:
            selector.close()

    def _accept(self, selector):
        client, peer = self._listener.accept()
        client.settimeout(CLIENT_TIMEOUT_S)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.settimeout(CLIENT_TIMEOUT_S)   # a stuck PROX, not forever
        try:
            upstream.connect(self.upstream_path)
        except OSError as exc:
            self.log('control relay: PROX not reachable for %s: %s'
                     % (peer[0], exc))
            upstream.close()
            client.close()
            return
        if len(self._pairs) >= MAX_CLIENTS:
            upstream.close()
            client.close()
            return
        pair = _Pair(client, upstream)
        self._pairs.append(pair)
        selector.register(client, selectors.EVENT_READ, (pair, True))
        selector.register(upstream, selectors.EVENT_READ, (pair, False))

    def _relay(self, selector, pair, from_client):
        source = pair.client if from_client else pair.upstream
        try:
            data = source.recv(65536)
        except OSError:
            data = b''
        if from_client:
            if not data:
                self._client_gone(selector, pair)
                return
            try:
                pair.upstream.sendall(data)
            except OSError:
                self._drop(selector, pair)
            return
        if not data:                      # PROX went away
            self._drop(selector, pair)
            return
        if pair.client is not None:
            try:
                pair.client.sendall(data)
            except OSError:
                self._client_gone(selector, pair)

    def _client_gone(self, selector, pair):
        if pair.client is not None:
            selector.unregister(pair.client)
            pair.client.close()
            pair.client = None
        pair.close_at = time.monotonic() + LINGER_S

    def _drop(self, selector, pair):
        for sock in (pair.client, pair.upstream):
            if sock is not None:
                selector.unregister(sock)
                sock.close()
        pair.client = pair.upstream = None
        if pair in self._pairs:
            self._pairs.remove(pair)
