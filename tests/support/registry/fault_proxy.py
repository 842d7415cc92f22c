#!/usr/bin/python3
"""Fault-injecting HTTP/1.1 reverse proxy for registry client tests.

Sits between a client and a plain-HTTP registry on 127.0.0.1 and passes
requests through unchanged (Host header included, so the registry's absolute
Location URLs point back at the proxy), except where a rule says otherwise.

Streaming: request and response bodies are relayed piece by piece (Content-
Length, chunked, or until-close responses), never held whole in memory, so
300 MB blobs are fine.  Each client connection gets one thread and its own
upstream connection; both are kept alive between requests when the peers allow.
`Expect: 100-continue` is honoured: the upstream's interim 100 is relayed.

Rules
-----
--rules names a file of JSON lines (blank lines and lines starting with `#` are
ignored).  It is re-read on every request; when its content changes all hit
counters start again from zero.  For each request the rules are tried in
order and the first one that matches and is not used up decides:

  {"method": "PATCH",          optional, "*" or absent = any method
   "path": "regex",            optional, re.search on path+query; absent = any
   "body_has": "text",         optional, the request body must contain this
                               (UTF-8, a plain substring); absent = any body
   "action": "...",            see below
   "times": 1,                 how many matching requests to affect; -1 = forever
   "skip": 0}                  let this many matching requests pass first

A request matches a rule when all its conditions hold; "times" and "skip"
count matching requests only.  To look for "body_has" the body is spooled
(memory, then a temporary file) before any rule decides, as for max_body's
chunked bodies (an `Expect: 100-continue` is then answered by the proxy
itself); a request no rule takes is forwarded with that body, unchanged.
E.g. refusing OCI 1.1 artifact manifests while accepting the others (a
"body" with a MANIFEST_INVALID errors document, "headers" with its
Content-Type, make the answer look like a registry's):
  {"method": "PUT", "path": "/manifests/", "body_has": "artifactType",
   "action": "status", "code": 400, "times": -1}

Actions:
  status        answer with "code" (default 503), optional "headers" {..} and
                "body" (default a short text), without forwarding.  The request
                body is read and thrown away first so the connection stays
                usable; with "close": true the answer goes out at once and the
                connection is closed (as a front proxy that gives up would do).
                A request carrying `Expect: 100-continue` always gets the
                close behaviour, since its body was never sent.
  cut_request   forward, but after "after_bytes" (default 0) bytes of request
                body close both connections (no answer reaches the client).
  cut_response  forward, but close the client connection after "after_bytes"
                (default 0) bytes of response body.
  stall         forward, send "after_bytes" bytes of response body, then go
                quiet for "seconds" (default 30) and close.
  corrupt       forward, flipping (xor 0xff) the response body byte at
                "offset" (default 0).
  throttle      forward, moving request and response bodies at "rate" bytes/s
                (default 262144).  Once "after_bytes" (default 1) body bytes of
                the request have moved, one extra log line says so:
                `conn=N METHOD PATH throttled: B bytes moved` (tests wait for
                it to act while the transfer is under way).
  endless       answer 200 (optional "headers" {..}) with a body that never ends:
                "piece" bytes (default "a") repeated, without Content-Length,
                until the client hangs up (at most "limit" bytes, default 4 GiB).
  drip          answer 200 with "Content-Length" "length" (default 1000000)
                and send one byte every "interval" seconds (default 0.5): a
                peer that never stalls and never finishes.
  hang          never answer: read the request (body included, no interim 100
                sent either) and then keep the connection open, sending
                nothing, until the client hangs up or the proxy stops (a
                server that accepted the request and went silent).  Its log
                line is written as soon as the request's head is in, before
                the body is read (so in= is 0 unless body_has spooled it): a
                test can wait for it while the client waits for an answer.
  (status: with "echo_auth": true the body repeats the request's Authorization
   header, as a misconfigured server's error page might.)
  max_body      a request whose body is larger than "limit" bytes gets "code"
                (default 413) with optional "headers"/"body"/"close" like
                `status`; smaller bodies pass untouched and do not count.
                "times" defaults to -1 here.  Chunked bodies are spooled
                (memory, then a temporary file) to learn their size.

Log: one line per request: connection number, method, path+query, upstream
status (or `-`), status seen by the client, action, request body bytes read,
response body bytes sent.  Header values (Authorization!) are never logged.
"""

import argparse
import http
import json
import os
import re
import select
import socket
import socketserver
import sys
import tempfile
import threading
import time

PIECE = 256 * 1024          # largest piece read or written at once
MAX_LINE = 64 * 1024        # longest accepted header line
IO_TIMEOUT = 300            # seconds before an idle socket is given up


class PeerClosed(Exception):
    """The peer closed the connection (or it broke) mid-message."""


# --------------------------------------------------------------------------
# HTTP/1.1 message parsing helpers


def read_head(rfile):
    """Read a start line and headers.

    Returns (start_line, [(name, value)...]) or None on a clean EOF before
    the first byte.
    """
    line = rfile.readline(MAX_LINE)
    while line in (b"\r\n", b"\n"):          # tolerate stray blank lines
        line = rfile.readline(MAX_LINE)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise PeerClosed("truncated start line")
    headers = []
    while True:
        h = rfile.readline(MAX_LINE)
        if not h or not h.endswith(b"\n"):
            raise PeerClosed("truncated header block")
        if h in (b"\r\n", b"\n"):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    return line.decode("latin-1").rstrip("\r\n"), headers


def header(headers, name):
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def header_tokens(headers, name):
    out = set()
    name = name.lower()
    for k, v in headers:
        if k.lower() == name:
            out.update(t.strip().lower() for t in v.split(",") if t.strip())
    return out


def without(headers, name):
    return [(k, v) for k, v in headers if k.lower() != name.lower()]


def encode_head(start, headers):
    return (start + "\r\n" + "".join("%s: %s\r\n" % kv for kv in headers) + "\r\n").encode("latin-1")


def body_framing(headers):
    """('chunked', None) | ('length', n) | ('none', 0) for a request."""
    if "chunked" in header_tokens(headers, "Transfer-Encoding"):
        return "chunked", None
    cl = header(headers, "Content-Length")
    if cl is not None:
        n = int(cl)
        return ("length", n) if n > 0 else ("none", 0)
    return "none", 0


def body_pieces(rfile, kind, length):
    """Yield the decoded body of a message framed as `kind`."""
    if kind == "length":
        left = length
        while left > 0:
            data = rfile.read1(min(PIECE, left))
            if not data:
                raise PeerClosed("body ended %d bytes early" % left)
            left -= len(data)
            yield data
    elif kind == "chunked":
        while True:
            line = rfile.readline(MAX_LINE)
            if not line.endswith(b"\n"):
                raise PeerClosed("truncated chunk size line")
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                # Trailer section ends with an empty line; trailers are dropped.
                while True:
                    t = rfile.readline(MAX_LINE)
                    if not t.endswith(b"\n"):
                        raise PeerClosed("truncated trailer")
                    if t in (b"\r\n", b"\n"):
                        return
            left = size
            while left > 0:
                data = rfile.read1(min(PIECE, left))
                if not data:
                    raise PeerClosed("chunk ended early")
                left -= len(data)
                yield data
            if rfile.readline(MAX_LINE) not in (b"\r\n", b"\n"):
                raise PeerClosed("missing CRLF after chunk")
    elif kind == "close":
        while True:
            data = rfile.read1(PIECE)
            if not data:
                return
            yield data


class BodyWriter:
    """Writes body pieces to a socket, re-encoding chunks when needed."""

    def __init__(self, sock, chunked):
        self.sock, self.chunked, self.count = sock, chunked, 0

    def write(self, data):
        if not data:
            return
        if self.chunked:
            self.sock.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            self.sock.sendall(data)
        self.count += len(data)

    def finish(self):
        if self.chunked:
            self.sock.sendall(b"0\r\n\r\n")


def reason(code):
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return "Injected"


def redact(target):
    # Registry URLs hold no secrets, but be safe with anything token-like.
    return re.sub(r"(?i)((?:token|password|secret|signature)[^=&]*=)[^&]*", r"\1REDACTED", target)


# --------------------------------------------------------------------------
# Rules


class Rules:
    """Rules file reader plus the hit counters behind `times` and `skip`."""

    def __init__(self, path, log):
        self.path, self.log = path, log
        self.lock = threading.Lock()
        self.content = None
        self.rules = []
        self.hits = {}

    def _reload(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                content = f.read()
        except OSError:
            content = ""
        if content == self.content:
            return
        self.content, self.rules, self.hits = content, [], {}
        for n, line in enumerate(content.splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                rule = json.loads(text)
                if not isinstance(rule, dict) or "action" not in rule:
                    raise ValueError("a rule is an object with an action")
                rule["_re"] = re.compile(rule.get("path") or "")
                if "body_has" in rule and not (isinstance(rule["body_has"], str) and rule["body_has"]):
                    raise ValueError("body_has is a non-empty string")
            except (ValueError, re.error) as e:
                self.log("rules: ignoring line %d: %s" % (n, e))
                continue
            rule["_key"] = (n, text)
            self.rules.append(rule)

    def pick(self, method, target, body_size, body_has):
        """First rule that matches and is not used up, or None.

        `body_size()` and `body_has(text)` are called only when a max_body
        rule needs the size of the request body or a body_has rule its
        content; they may read the body off the socket, so the lock is let go
        meanwhile (other connections keep being served).
        """
        def unlocked(fn, *args):
            self.lock.release()
            try:
                return fn(*args)
            finally:
                self.lock.acquire()

        with self.lock:
            self._reload()
            size = None
            for rule in self.rules[:]:
                m = rule.get("method") or "*"
                if m != "*" and m.upper() != method.upper():
                    continue
                if not rule["_re"].search(target):
                    continue
                if "body_has" in rule and not unlocked(body_has, rule["body_has"]):
                    continue
                action = rule["action"]
                if action == "max_body":
                    if size is None:
                        size = unlocked(body_size)
                    if size <= int(rule.get("limit", 0)):
                        continue
                default_times = -1 if action == "max_body" else 1
                times = int(rule.get("times", default_times))
                skip = int(rule.get("skip", 0))
                seen = self.hits.get(rule["_key"], 0)
                self.hits[rule["_key"]] = seen + 1
                if seen < skip:
                    return None
                if times >= 0 and seen >= skip + times:
                    continue
                return rule
            return None


# --------------------------------------------------------------------------
# The proxy


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listen, upstream, rules_path, log_path):
        super().__init__(listen, ClientHandler)
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.log_file = open(log_path, "a", buffering=1, encoding="utf-8") if log_path else sys.stderr
        self.log_lock = threading.Lock()
        self.rules = Rules(rules_path, self.log) if rules_path else None
        self.conn_counter = 0

    def log(self, line):
        # One clock reading for both parts: two readings could straddle a second and
        # stamp a line a whole second early (a 1 s Retry-After gap then measured 0 s).
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)
        with self.log_lock:
            self.log_file.write("%s %s\n" % (stamp, line))

    def next_conn_id(self):
        with self.log_lock:
            self.conn_counter += 1
            return self.conn_counter


class ClientHandler(socketserver.BaseRequestHandler):
    def setup(self):
        self.sock = self.request
        self.sock.settimeout(IO_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")
        self.up = None          # upstream socket
        self.up_rfile = None
        self.cid = self.server.next_conn_id()

    # -- upstream connection ------------------------------------------------
    def upstream(self):
        if self.up is not None:
            # An idle keep-alive connection the upstream has closed reads as
            # ready (EOF); replace it instead of failing the next request.
            ready, _, _ = select.select([self.up], [], [], 0)
            if ready:
                self.drop_upstream()
        if self.up is None:
            self.up = socket.create_connection(self.server.upstream, timeout=IO_TIMEOUT)
            self.up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.up_rfile = self.up.makefile("rb")
        return self.up

    def drop_upstream(self):
        if self.up is not None:
            try:
                self.up.close()
            except OSError:
                pass
        self.up = self.up_rfile = None

    # -- main loop ------------------------------------------------------------
    def handle(self):
        try:
            while self.one_request():
                pass
        except (PeerClosed, OSError, ValueError) as e:
            self.server.log("conn=%d closed: %s" % (self.cid, e or type(e).__name__))
        finally:
            self.drop_upstream()

    def finish(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send_client(self, data):
        self.sock.sendall(data)

    def close_client(self, linger=False):
        """Close the client connection; with linger, drain briefly first so
        the client can read an early answer instead of seeing a reset."""
        try:
            if linger:
                self.sock.shutdown(socket.SHUT_WR)
                self.sock.settimeout(0.5)
                end = time.time() + 2
                while time.time() < end and self.sock.recv(PIECE):
                    pass
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def one_request(self):
        """Serve one request; False when the client connection is done."""
        head = read_head(self.rfile)
        if head is None:
            return False
        start, headers = head
        parts = start.split(" ")
        if len(parts) != 3:
            raise PeerClosed("bad request line")
        method, target, version = parts
        kind, length = body_framing(headers)
        expect = (header(headers, "Expect") or "").lower() == "100-continue" and kind != "none"
        client_close = "close" in header_tokens(headers, "Connection") or version == "HTTP/1.0"
        stats = {"in": 0, "out": 0, "up": "-", "code": "-", "action": "pass", "note": ""}
        spool = None

        def spool_body():
            """The whole request body, read into `spool` (once)."""
            nonlocal spool, expect, headers
            if spool is None:
                if expect:
                    self.send_client(b"HTTP/1.1 100 Continue\r\n\r\n")
                    expect = False
                    headers = without(headers, "Expect")
                spool = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)
                for data in body_pieces(self.rfile, kind, length):
                    spool.write(data)
            return spool

        def body_size():
            # Only a max_body rule asks; a chunked body must be read to know.
            if spool is not None:
                return spool.seek(0, os.SEEK_END)
            if kind == "length":
                return length
            if kind == "none":
                return 0
            return spool_body().seek(0, os.SEEK_END)

        found = {}

        def body_has(text):
            # Only a body_has rule asks: the body is read whole, then searched
            # piece by piece (a match may straddle two pieces).
            if kind == "none":
                return False
            if text not in found:
                needle, f, tail = text.encode(), spool_body(), b""
                f.seek(0)
                found[text] = False
                while True:
                    data = f.read(PIECE)
                    if not data:
                        break
                    data = tail + data
                    if needle in data:
                        found[text] = True
                        break
                    tail = data[max(0, len(data) - len(needle) + 1):]
            return found[text]

        rule = self.server.rules.pick(method, target, body_size, body_has) if self.server.rules else None
        action = rule["action"] if rule else "pass"
        stats["action"] = action

        def log():
            self.server.log("conn=%d %s %s upstream=%s status=%s action=%s in=%d out=%d%s" % (
                self.cid, method, redact(target), stats["up"], stats["code"], stats["action"],
                stats["in"], stats["out"], (" " + stats["note"]) if stats["note"] else ""))

        def request_body():
            """The request body, from the spool or straight off the socket."""
            if spool is not None:
                spool.seek(0)
                while True:
                    data = spool.read(PIECE)
                    if not data:
                        return
                    yield data
            elif kind != "none":
                yield from body_pieces(self.rfile, kind, length)

        moved = {"in": 0, "out": 0, "marked": False}

        def throttled(pieces, direction):
            """Pieces as they come, or at the rule's rate for a throttle rule."""
            if action != "throttle":
                yield from pieces
                return
            rate = max(1, int(rule.get("rate", 262144)))
            mark = max(1, int(rule.get("after_bytes", 1)))
            step = max(1, rate // 20)
            began = time.monotonic()
            for data in pieces:
                for i in range(0, len(data), step):
                    piece = data[i:i + step]
                    moved[direction] += len(piece)
                    due = began + moved[direction] / rate
                    wait = due - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    yield piece
                    if not moved["marked"] and moved["in"] + moved["out"] >= mark:
                        moved["marked"] = True
                        self.server.log("conn=%d %s %s throttled: %d bytes moved" % (
                            self.cid, method, redact(target), moved["in"] + moved["out"]))

        # ---- answered here, never forwarded -----------------------------
        if action == "hang":
            if spool is not None:
                stats["in"] = spool.seek(0, os.SEEK_END)
            stats["note"] = "hanging until the client hangs up"
            log()
            try:
                for data in request_body():
                    pass
                # Anything more the client sends is read and dropped; only its
                # hang-up (EOF or an error) ends the wait.
                while True:
                    ready, _, _ = select.select([self.sock], [], [], 60)
                    if ready and not self.sock.recv(PIECE):
                        break
            except (PeerClosed, OSError, ValueError):
                pass
            self.close_client()
            return False

        if action in ("endless", "drip"):
            for data in request_body():
                stats["in"] += len(data)
            extra = [(k, str(v)) for k, v in (rule.get("headers") or {}).items()]
            if action == "drip":
                extra.append(("Content-Length", str(int(rule.get("length", 1000000)))))
            extra.append(("Connection", "close"))
            stats["code"] = 200
            try:
                self.send_client(encode_head("HTTP/1.1 200 OK", extra))
                if action == "endless":
                    piece = (rule.get("piece", "a") * 65536).encode()[:65536]
                    limit = int(rule.get("limit", 4 << 30))
                    while stats["out"] < limit:
                        self.send_client(piece)
                        stats["out"] += len(piece)
                else:
                    interval = float(rule.get("interval", 0.5))
                    for _ in range(int(rule.get("length", 1000000))):
                        self.send_client(b"x")
                        stats["out"] += 1
                        time.sleep(interval)
            except OSError:
                pass
            log()
            self.close_client(linger=False)
            return False

        if action in ("status", "max_body"):
            code = int(rule.get("code", 413 if action == "max_body" else 503))
            # With "close" (or a body still held back behind Expect) answer at
            # once and hang up; otherwise swallow the body so the connection
            # stays in step and can carry the next request.
            hard_close = bool(rule.get("close")) or expect
            if not hard_close:
                for data in request_body():
                    stats["in"] += len(data)
            close = hard_close or client_close
            text = rule.get("body", "fault_proxy: injected %d\n" % code).encode()
            if rule.get("echo_auth"):
                text += ("request headers: Authorization: %s\n{\"Authorization\":[\"%s\"]}\n" % (
                    header(headers, "Authorization") or "", header(headers, "Authorization") or "")).encode()
            extra = list((rule.get("headers") or {}).items())
            names = {k.lower() for k, _ in extra}
            out = [(k, str(v)) for k, v in extra]
            if "content-type" not in names:
                out.append(("Content-Type", "text/plain; charset=utf-8"))
            out.append(("Content-Length", str(len(text))))
            if close:
                out.append(("Connection", "close"))
            self.send_client(encode_head("HTTP/1.1 %d %s" % (code, reason(code)), out))
            if method != "HEAD":
                self.send_client(text)
                stats["out"] = len(text)
            stats["code"] = code
            log()
            if close:
                self.close_client(linger=hard_close)
                return False
            return True

        # ---- forwarded ----------------------------------------------------
        try:
            up = self.upstream()
        except OSError as e:
            text = b"fault_proxy: upstream unreachable\n"
            self.send_client(encode_head("HTTP/1.1 502 Bad Gateway", [
                ("Content-Type", "text/plain"), ("Content-Length", str(len(text))),
                ("Connection", "close")]) + text)
            stats["code"], stats["note"] = 502, "connect failed: %s" % e
            log()
            return False

        fwd_headers = headers
        if spool is not None:
            # The body was read already (and 100 sent if asked): re-chunk it.
            fwd_headers = without(headers, "Expect")
        up.sendall(encode_head(start, fwd_headers))

        must_close = False
        early = None                # a final answer that came before the body
        if expect:
            early = read_head(self.up_rfile)
            if early is None:
                raise PeerClosed("upstream closed before answering")
            if early[0].split(" ")[1] == "100":
                self.send_client(b"HTTP/1.1 100 Continue\r\n\r\n")
                early = None
            else:
                # The client will not send its body: answer, then close.
                must_close = True

        if early is None and kind != "none":
            writer = BodyWriter(up, chunked=(kind == "chunked"))
            cut_at = int(rule.get("after_bytes", 0)) if action == "cut_request" else None
            try:
                for data in throttled(request_body(), "in"):
                    if cut_at is not None and stats["in"] + len(data) >= cut_at:
                        writer.write(data[:cut_at - stats["in"]])
                        stats["in"] = cut_at
                        stats["note"] = "request cut"
                        log()
                        self.drop_upstream()
                        self.close_client()
                        return False
                    stats["in"] += len(data)
                    writer.write(data)
                if cut_at is not None:
                    # Body shorter than after_bytes: cut right after it.
                    stats["note"] = "request cut at end of body"
                    writer.finish()
                    log()
                    self.drop_upstream()
                    self.close_client()
                    return False
                writer.finish()
            except (BrokenPipeError, ConnectionResetError) as e:
                # The upstream answered early and hung up; try to relay the
                # answer anyway, then close (the client body is out of sync).
                stats["note"] = "upstream stopped reading body: %s" % e
                must_close = True

        # ---- response -----------------------------------------------------
        resp = early
        while resp is None:
            resp = read_head(self.up_rfile)
            if resp is None:
                raise PeerClosed("upstream closed without answering")
            if resp[0].split(" ")[1].startswith("1"):
                resp = None         # an interim answer nobody asked for
        rstart, rheaders = resp
        code = int(rstart.split(" ")[1])
        stats["up"] = stats["code"] = code
        if method == "HEAD" or code in (204, 304):
            rkind, rlen = "none", 0
        elif "chunked" in header_tokens(rheaders, "Transfer-Encoding"):
            rkind, rlen = "chunked", None
        elif header(rheaders, "Content-Length") is not None:
            rlen = int(header(rheaders, "Content-Length"))
            rkind = "length" if rlen > 0 else "none"
        else:
            rkind, rlen = "close", None
        up_close = "close" in header_tokens(rheaders, "Connection") or rkind == "close"
        self.send_client(encode_head(rstart, rheaders))

        writer = BodyWriter(self.sock, chunked=(rkind == "chunked"))
        stop_at = int(rule.get("after_bytes", 0)) if action in ("cut_response", "stall") else None
        flip_at = int(rule.get("offset", 0)) if action == "corrupt" else None
        pieces = body_pieces(self.up_rfile, rkind, rlen) if rkind != "none" else iter(())
        pieces = throttled(pieces, "out")
        for data in pieces:
            pos = writer.count
            if flip_at is not None and pos <= flip_at < pos + len(data):
                i = flip_at - pos
                data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
                stats["note"] = "flipped byte %d" % flip_at
            if stop_at is not None and pos + len(data) >= stop_at:
                writer.write(data[:stop_at - pos])
                stats["out"] = writer.count
                if action == "stall":
                    seconds = float(rule.get("seconds", 30))
                    stats["note"] = "stalled %gs after %d bytes" % (seconds, writer.count)
                    log()
                    time.sleep(seconds)
                else:
                    stats["note"] = "response cut after %d bytes" % writer.count
                    log()
                self.drop_upstream()
                self.close_client()
                return False
            writer.write(data)
        if rkind != "none":
            writer.finish()
        stats["out"] = writer.count
        if stop_at is not None:
            stats["note"] = "body shorter than after_bytes; not cut"
        log()
        if up_close or must_close:
            self.drop_upstream()
        if must_close or client_close or rkind == "close":
            self.close_client(linger=must_close)
            return False
        return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0 picks a free one)")
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--upstream", required=True, help="HOST:PORT of the plain-HTTP server")
    p.add_argument("--rules", help="rules file (JSON lines), re-read on every request")
    p.add_argument("--log", help="log file (default stderr)")
    args = p.parse_args()

    host, _, port = args.listen.rpartition(":")
    up_host = args.upstream.rpartition(":")[0]
    loopback = ("127.0.0.1", "localhost", "::1")
    if host not in loopback or up_host not in loopback:
        p.error("only loopback addresses are allowed")
    proxy = Proxy((host, int(port)), args.upstream, args.rules, args.log)
    bound = proxy.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % bound)
        os.replace(tmp, args.port_file)
    proxy.log("listening on %s:%d, upstream %s" % (host, bound, args.upstream))
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
