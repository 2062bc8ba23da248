"""An HTTPS proxy in front of a lab API server that lets a test act between two requests of a task.

Fault tests must reach "the middle of a task" deterministically: the task under test talks to the
proxy instead of the API server, and the proxy calls ``before(method, path, client)`` ahead of
forwarding each request (``client``: the address of the connection it came on, one per module
process). The hook can change the world at that exact point (stop the API server, expire a token) or
hold the request until something else happened, and the request then goes on, or fails as it would
against a server that went away.

The proxy terminates TLS with the cluster's own serving certificate (SAN 127.0.0.1), so clients keep
trusting the cluster CA. Requests with a bearer token are forwarded as they are; a client that
authenticates with a certificate is forwarded with the lab's admin certificate (the proxy cannot use
the client's key). When the API server does not answer, the client's connection is closed without
an answer, as a dead server's would be.
"""

import http.client
import http.server
import os
import ssl
import threading

# Hop-by-hop headers and those http.client sets itself.
SKIPPED_HEADERS = {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}


class ApiProxy:
    """``with ApiProxy(lab.clusters["hub"], before) as proxy:`` - ``proxy.url`` reaches the hub through ``before``."""

    def __init__(self, cluster, before=None):
        self.cluster = cluster
        self.before = before or (lambda method, path, client: None)
        self.requests = []  # (method, path) of every request received
        pki = os.path.join(cluster["dir"], "pki")
        self._upstream = cluster["server"].split("://", 1)[1].rsplit(":", 1)
        self._anonymous = ssl.create_default_context(cafile=cluster["ca_cert"])
        self._admin = ssl.create_default_context(cafile=cluster["ca_cert"])
        self._admin.load_cert_chain(cluster["admin_cert"], cluster["admin_key"])
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"))
        serving.verify_mode = ssl.CERT_OPTIONAL  # ask for a client certificate, as the API server does
        serving.load_verify_locations(cluster["ca_cert"])
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.socket = serving.wrap_socket(self._server.socket, server_side=True)
        self.url = "https://127.0.0.1:%d" % self._server.server_address[1]
        self._thread = None

    def __enter__(self):
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def kubeconfig(self, path, source):
        """Write to ``path`` a copy of the kubeconfig ``source`` whose server is this proxy; return ``path``."""
        with open(source) as handle:
            text = handle.read()
        with open(path, "w") as handle:
            handle.write(text.replace(self.cluster["server"], self.url))
        return path

    def _forward(self, handler):
        method, path = handler.command, handler.path
        self.requests.append((method, path))
        self.before(method, path, handler.client_address)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = dict((k, v) for k, v in handler.headers.items() if k.lower() not in SKIPPED_HEADERS)
        context = self._admin if handler.connection.getpeercert() else self._anonymous
        upstream = http.client.HTTPSConnection(self._upstream[0], int(self._upstream[1]), context=context, timeout=30)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            # An answer of unknown length (a watch) is passed on as it comes, one line (one event) at a time, as a proxy
            # that streams does; the others whole.
            streamed = response.getheader("Content-Length") is None
            data = b"" if streamed else response.read()
            handler.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in SKIPPED_HEADERS:
                    handler.send_header(key, value)
            if not streamed:
                handler.send_header("Content-Length", str(len(data)))
                handler.end_headers()
                handler.wfile.write(data)
                return
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            for line in iter(response.readline, b""):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            handler.close_connection = True  # no answer, or the answer broke off: the client sees the connection drop
        finally:
            upstream.close()

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - http.server API
                proxy._forward(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        return Handler
