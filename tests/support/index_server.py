#!/usr/bin/python3
"""Python package index (PEP 503 / 691 / 658 / 714 / 592 / 700) for tests.

    python3 index_server.py --root DIR --port-file FILE --log FILE
        [--auth USER:PASS] [--fail-first N] [--cut-first N] [--tamper FILENAME]...
        [--no-json] [--no-metadata] [--yank FILENAME=REASON]... [--drip]

Listens on 127.0.0.1, on an ephemeral port that is written to --port-file
(atomically) once the socket is listening.  Runs until SIGTERM/SIGINT.
Serves every *.whl and *.tar.gz directly in --root (hashed once at startup).

URLs
----
  /simple/                  root index (HTML, or PEP 691 JSON when negotiated)
  /simple/<project>/        project page; non-normalized names and a missing
                            trailing slash get 301 to the normalized URL
  /find-links.html          flat page of absolute links (also /find-links/)
  /files/<filename>         the file; HEAD and Range (bytes=N-, N-M, -N)
  /files/<wheel>.metadata   PEP 658 core metadata (the wheel's METADATA)

Content negotiation (PEP 691): the best q-value among
application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html and
text/html wins (…latest+json/html count as v1, */* and text/* as text/html;
ties favour JSON, then v1+html).  No usable Accept -> text/html.  The answer
carries the chosen Content-Type.  --no-json: always text/html.

Faults
------
  --auth U:P        every request needs Basic auth (else 401 + WWW-Authenticate).
                    Checked first: refused requests use up no fault counters.
  --fail-first N    first N requests of each distinct path (no query) get 503
                    with Retry-After: 0.
  --cut-first N     first N GETs of each /files/ path (not .metadata) that reach
                    the file (after auth and --fail-first) send the full headers,
                    half the body, then the connection is closed.  Range GETs
                    count too (they get half of their range).
  --tamper NAME     NAME is served with its last byte flipped; pages advertise
                    the original hash.
  --yank NAME=WHY   NAME is yanked (PEP 592) with reason WHY (empty -> true).
  --no-metadata     no PEP 658 metadata offered; .metadata URLs 404.
  --lie-metadata NAME=FILE
                    NAME's PEP 658 metadata is FILE's bytes (the pages advertise
                    their hash): metadata that disagrees with the wheel.
  --drip            every answer with a body (pages, metadata, files) is sent one
                    byte every 0.5 s: a peer that never stalls and never finishes.

Log: one line per request, appended and flushed:
  METHOD PATH STATUS BYTES_SENT RANGE
PATH is the raw request target, BYTES_SENT the body bytes actually written,
RANGE the Range header with spaces removed, or "-".
"""

import argparse
import base64
import email.parser
import hashlib
import html
import http.server
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import urllib.parse
import zipfile

CHUNK = 64 * 1024
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
V1_HTML_TYPE = "application/vnd.pypi.simple.v1+html"
HTML_TYPE = "text/html"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def natural_key(s):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", s) if p]


class Dist:
    def __init__(self, root, filename, tampered, yank_reason, offer_metadata):
        self.filename = filename
        self.path = os.path.join(root, filename)
        if filename.endswith(".whl"):
            parts = filename[:-4].split("-")
            self.project, self.version = parts[0], parts[1]
        else:
            self.project, _, self.version = filename[:-7].rpartition("-")
        self.key = normalize(self.project)
        self.size = os.path.getsize(self.path)
        h = hashlib.sha256()
        with open(self.path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        self.sha256 = h.hexdigest()
        self.tampered = tampered
        self.yanked = yank_reason  # None or str
        self.metadata = None
        self.requires_python = None
        if filename.endswith(".whl"):
            with zipfile.ZipFile(self.path) as z:
                names = [n for n in z.namelist()
                         if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
                if names:
                    raw = z.read(names[0])
                    msg = email.parser.BytesHeaderParser().parsebytes(raw)
                    self.requires_python = msg.get("Requires-Python")
                    if offer_metadata:
                        self.metadata = raw
                        self.metadata_sha256 = hashlib.sha256(raw).hexdigest()

    def quoted(self):
        return urllib.parse.quote(self.filename)


class Index:
    def __init__(self, args):
        self.args = args
        yanks = {}
        for spec in args.yank:
            name, sep, reason = spec.partition("=")
            if not sep:
                sys.exit(f"index_server: --yank wants FILENAME=REASON, got {spec!r}")
            yanks[name] = reason
        names = sorted(n for n in os.listdir(args.root)
                       if (n.endswith(".whl") or n.endswith(".tar.gz"))
                       and os.path.isfile(os.path.join(args.root, n)))
        lies = dict(spec.partition("=")[::2] for spec in args.lie_metadata)
        for n in list(yanks) + list(args.tamper) + list(lies):
            if n not in names:
                sys.exit(f"index_server: no file {n!r} in {args.root}")
        self.files = {}
        self.projects = {}
        for n in names:
            d = Dist(args.root, n, n in args.tamper, yanks.get(n),
                     not args.no_metadata)
            if n in lies and d.metadata is not None:
                with open(lies[n], "rb") as f:
                    d.metadata = f.read()
                d.metadata_sha256 = hashlib.sha256(d.metadata).hexdigest()
            self.files[n] = d
            self.projects.setdefault(d.key, []).append(d)
        self.lock = threading.Lock()
        self.fail_counts = {}
        self.cut_counts = {}
        self.log = open(args.log, "a", encoding="utf-8")
        self.port = None

    def bump(self, table, key):
        with self.lock:
            table[key] = table.get(key, 0) + 1
            return table[key]

    def write_log(self, line):
        with self.lock:
            self.log.write(line + "\n")
            self.log.flush()


def parse_accept(header):
    """Return the chosen content type or None when nothing listed is usable."""
    if not header:
        return None
    best = None  # (q, preference, type)
    pref = {JSON_TYPE: 3, V1_HTML_TYPE: 2, HTML_TYPE: 1}
    aliases = {
        JSON_TYPE: JSON_TYPE, "application/vnd.pypi.simple.latest+json": JSON_TYPE,
        V1_HTML_TYPE: V1_HTML_TYPE, "application/vnd.pypi.simple.latest+html": V1_HTML_TYPE,
        HTML_TYPE: HTML_TYPE, "text/*": HTML_TYPE, "*/*": HTML_TYPE,
    }
    for item in header.split(","):
        fields = [f.strip() for f in item.split(";")]
        mtype = fields[0].lower()
        if mtype not in aliases:
            continue
        q = 1.0
        for p in fields[1:]:
            k, _, v = p.partition("=")
            if k.strip().lower() == "q":
                try:
                    q = float(v.strip())
                except ValueError:
                    q = 0.0
        if q <= 0:
            continue
        t = aliases[mtype]
        cand = (q, pref[t], t)
        if best is None or cand[:2] > best[:2]:
            best = cand
    return best[2] if best else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "paddle-image-test-index/1"
    index = None  # set in main

    # -- plumbing ------------------------------------------------------------
    def log_message(self, fmt, *args):  # silence stderr
        pass

    def _finish_log(self, status, sent):
        rng = self.headers.get("Range") if self.headers else None
        rng = re.sub(r"\s+", "", rng) if rng else "-"
        self.index.write_log(f"{self.command} {self.path} {status} {sent} {rng}")

    def _respond(self, status, body=b"", ctype="text/plain; charset=utf-8", headers=()):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        sent = 0
        if self.command != "HEAD" and body:
            try:
                if self.index.args.drip:
                    for i in range(len(body)):
                        self.wfile.write(body[i:i + 1])
                        sent += 1
                        time.sleep(0.5)
                self.wfile.write(body[sent:])
                sent = len(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
        self._finish_log(status, sent)

    def do_HEAD(self):
        self._dispatch()

    def do_GET(self):
        self._dispatch()

    def _dispatch(self):
        idx = self.index
        args = idx.args
        if args.auth is not None:
            if not self._auth_ok(self.headers.get("Authorization", ""), args.auth):
                return self._respond(401, "authentication required\n",
                                     headers=[("WWW-Authenticate", 'Basic realm="index"')])
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        if args.fail_first and idx.bump(idx.fail_counts, path) <= args.fail_first:
            return self._respond(503, "try again\n", headers=[("Retry-After", "0")])
        upath = urllib.parse.unquote(path)
        if upath == "/simple":
            return self._redirect("/simple/", split.query)
        if upath == "/simple/":
            return self._root_page()
        m = re.fullmatch(r"/simple/([^/]+)(/?)", upath)
        if m:
            name, slash = m.groups()
            if name != normalize(name) or not slash:
                return self._redirect(f"/simple/{urllib.parse.quote(normalize(name))}/",
                                      split.query)
            if name not in idx.projects:
                return self._respond(404, "no such project\n")
            return self._project_page(name)
        if upath in ("/find-links.html", "/find-links/"):
            return self._find_links()
        if upath == "/find-links":
            return self._redirect("/find-links/", split.query)
        if upath.startswith("/files/"):
            name = upath[len("/files/"):]
            if name.endswith(".metadata") and name[:-9] in idx.files:
                d = idx.files[name[:-9]]
                if d.metadata is None:
                    return self._respond(404, "no metadata\n")
                return self._respond(200, d.metadata, "application/octet-stream",
                                     [("ETag", f'"{d.metadata_sha256}"')])
            if name in idx.files:
                return self._send_file(idx.files[name], path)
        return self._respond(404, "not found\n")

    @staticmethod
    def _auth_ok(header, creds):
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            return base64.b64decode(value.strip(), validate=True).decode() == creds
        except (ValueError, UnicodeDecodeError):
            return False

    def _base(self):
        host = self.headers.get("Host") or f"127.0.0.1:{self.index.port}"
        return f"http://{host}"

    def _redirect(self, target, query):
        if query:
            target += "?" + query
        self._respond(301, f"moved to {target}\n",
                      headers=[("Location", self._base() + target)])

    # -- pages ---------------------------------------------------------------
    def _negotiate(self):
        if self.index.args.no_json:
            return HTML_TYPE
        return parse_accept(self.headers.get("Accept")) or HTML_TYPE

    def _page(self, ctype, body):
        self._respond(200, body, ctype if ctype == JSON_TYPE else ctype + "; charset=utf-8",
                      [("Vary", "Accept"), ("Cache-Control", "max-age=0")])

    def _root_page(self):
        ctype = self._negotiate()
        keys = sorted(self.index.projects)
        if ctype == JSON_TYPE:
            doc = {"meta": {"api-version": "1.1"}, "projects": [{"name": k} for k in keys]}
            return self._page(ctype, json.dumps(doc, indent=1))
        lines = ["<!DOCTYPE html>", "<html>", "<head>",
                 '<meta name="pypi:repository-version" content="1.1">',
                 "<title>Simple index</title>", "</head>", "<body>"]
        lines += [f'<a href="{urllib.parse.quote(k)}/">{html.escape(k)}</a><br>' for k in keys]
        lines += ["</body>", "</html>", ""]
        self._page(ctype, "\n".join(lines))

    def _project_page(self, key):
        ctype = self._negotiate()
        dists = self.index.projects[key]
        if ctype == JSON_TYPE:
            files = []
            for d in dists:
                f = {"filename": d.filename, "url": "../../files/" + d.quoted(),
                     "hashes": {"sha256": d.sha256}, "size": d.size}
                if d.requires_python:
                    f["requires-python"] = d.requires_python
                f["yanked"] = False if d.yanked is None else (d.yanked or True)
                if d.metadata is not None:
                    f["core-metadata"] = {"sha256": d.metadata_sha256}
                    f["dist-info-metadata"] = {"sha256": d.metadata_sha256}
                files.append(f)
            versions = sorted({d.version for d in dists}, key=natural_key)
            doc = {"meta": {"api-version": "1.1"}, "name": key, "files": files,
                   "versions": versions}
            return self._page(ctype, json.dumps(doc, indent=1))
        lines = ["<!DOCTYPE html>", "<html>", "<head>",
                 '<meta name="pypi:repository-version" content="1.1">',
                 f"<title>Links for {html.escape(key)}</title>", "</head>", "<body>",
                 f"<h1>Links for {html.escape(key)}</h1>"]
        for d in dists:
            attrs = [f'href="../../files/{html.escape(d.quoted())}#sha256={d.sha256}"']
            if d.requires_python:
                attrs.append(f'data-requires-python="{html.escape(d.requires_python)}"')
            if d.yanked is not None:
                attrs.append(f'data-yanked="{html.escape(d.yanked)}"')
            if d.metadata is not None:
                attrs.append(f'data-core-metadata="sha256={d.metadata_sha256}"')
                attrs.append(f'data-dist-info-metadata="sha256={d.metadata_sha256}"')
            lines.append(f"<a {' '.join(attrs)}>{html.escape(d.filename)}</a><br>")
        lines += ["</body>", "</html>", ""]
        self._page(ctype, "\n".join(lines))

    def _find_links(self):
        base = f"http://127.0.0.1:{self.index.port}/files/"
        lines = ["<!DOCTYPE html>", "<html>", "<head><title>Wheels</title></head>", "<body>"]
        for name in sorted(self.index.files):
            d = self.index.files[name]
            lines.append(f'<a href="{html.escape(base + d.quoted())}#sha256={d.sha256}">'
                         f"{html.escape(d.filename)}</a><br>")
        lines += ["</body>", "</html>", ""]
        self._respond(200, "\n".join(lines), "text/html; charset=utf-8")

    # -- files ---------------------------------------------------------------
    def _parse_range(self, size):
        """None = whole file; (start, end) inclusive; 'bad' = 416."""
        h = self.headers.get("Range")
        if not h:
            return None
        m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", h)
        if not m or (not m.group(1) and not m.group(2)):
            return None  # unsupported form (e.g. multi-range): ignore it
        a, b = m.groups()
        if a:
            start = int(a)
            end = min(int(b), size - 1) if b else size - 1
            if start >= size or (b and int(b) < start):
                return "bad"
        else:
            n = int(b)
            if n == 0:
                return "bad"
            start, end = max(0, size - n), size - 1
        return start, end

    def _send_file(self, d, path):
        idx = self.index
        rng = self._parse_range(d.size)
        if rng == "bad":
            return self._respond(416, "range not satisfiable\n",
                                 headers=[("Content-Range", f"bytes */{d.size}")])
        start, end = (0, d.size - 1) if rng is None else rng
        length = end - start + 1 if d.size else 0
        status = 200 if rng is None else 206
        cut = False
        if self.command == "GET" and idx.args.cut_first:
            cut = idx.bump(idx.cut_counts, path) <= idx.args.cut_first
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{d.sha256}"')
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{d.size}")
        self.end_headers()
        if self.command == "HEAD":
            return self._finish_log(status, 0)
        todo = length // 2 if cut else length
        sent = 0
        try:
            with open(d.path, "rb") as f:
                f.seek(start)
                pos = start
                while sent < todo:
                    chunk = f.read(min(CHUNK, todo - sent))
                    if not chunk:
                        break
                    if d.tampered and pos <= d.size - 1 < pos + len(chunk):
                        b = bytearray(chunk)
                        b[d.size - 1 - pos] ^= 0xFF
                        chunk = bytes(b)
                    self.wfile.write(chunk)
                    sent += len(chunk)
                    pos += len(chunk)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        if cut:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._finish_log(status, sent)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def get_request(self):
        # The handler writes headers and body in separate sends: without TCP_NODELAY each
        # answer on a kept-alive connection waits out the client's delayed ACK (~40 ms),
        # which is this server's cost, not the client's.
        sock, addr = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, addr

    def handle_error(self, request, client_address):
        # A client vanishing mid-request is normal in these tests.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="test package index on 127.0.0.1")
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--auth", metavar="USER:PASS")
    ap.add_argument("--fail-first", type=int, default=0, metavar="N")
    ap.add_argument("--cut-first", type=int, default=0, metavar="N")
    ap.add_argument("--tamper", action="append", default=[], metavar="FILENAME")
    ap.add_argument("--no-json", action="store_true")
    ap.add_argument("--no-metadata", action="store_true")
    ap.add_argument("--lie-metadata", action="append", default=[], metavar="FILENAME=FILE")
    ap.add_argument("--yank", action="append", default=[], metavar="FILENAME=REASON")
    ap.add_argument("--drip", action="store_true")
    args = ap.parse_args()
    if args.auth is not None and ":" not in args.auth:
        ap.error("--auth wants USER:PASS")

    index = Index(args)
    Handler.index = index
    server = Server(("127.0.0.1", 0), Handler)
    index.port = server.server_address[1]

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              daemon=True)
    thread.start()
    tmp = f"{args.port_file}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{index.port}\n")
    os.replace(tmp, args.port_file)

    while not stop.wait(1.0):
        pass
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
    index.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
