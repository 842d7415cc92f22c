#!/usr/bin/python3
"""Minimal token server for distribution's "token" auth, for tests only.

It implements the two halves of the Docker registry token protocol that a
registry client meets:

  GET  /token?service=S&scope=repository:NAME:pull,push[&scope=...]
       HTTP Basic credentials optional; without them the caller is anonymous.
       Query `offline_token=true` also returns a refresh_token.
       Answer: {"token", "access_token", "expires_in", "issued_at"[, "refresh_token"]}

  POST /token   (OAuth2 form, application/x-www-form-urlencoded)
       grant_type=password      with username, password
       grant_type=refresh_token with refresh_token
       plus service, scope (space separated), client_id, access_type=offline
       Answer: {"access_token", "expires_in", "issued_at", "scope"[, "refresh_token"]}

Tokens are JWTs signed with RS256.  The header carries `x5c` = [the signing
certificate]; the registry checks it against its `rootcertbundle`, which is
that very (self-signed) certificate.

Policy (deliberately simple): an authenticated user is granted every action it
asks for on every resource, unless its line in the users file restricts the
actions (`user:password:pull` grants pull only).  Anonymous callers get an
empty access list, or pull only with --anonymous-pull.  A wrong password gives
401 with a JSON error body.

Users file: one `user:password[:action,action]` per line; `#` comments.

The log gets one line per request and never holds a password or a token.
Only the standard library and `cryptography` are used (run it with
/usr/bin/python3, which has Debian's python3-cryptography).
"""

import argparse
import base64
import datetime
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def rfc3339(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_or_make_signer(key_path: str, cert_path: str):
    """Load the RSA key and certificate, creating both when the files are missing."""
    if not (os.path.exists(key_path) and os.path.exists(cert_path)):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "paddle-test-token-signer")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=False, encipher_only=False, decipher_only=False),
                critical=True)
            .sign(key, hashes.SHA256())
        )
        # Write to temporary names first so a reader never sees half a file.
        for path, data in (
            (key_path, key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())),
            (cert_path, cert.public_bytes(serialization.Encoding.PEM)),
        ):
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
    with open(key_path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    with open(cert_path, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    return key, cert


def load_users(path):
    """users file -> {name: (password, allowed actions or None for all)}."""
    users = {}
    if not path:
        return users
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(":", 2)
            if len(parts) < 2:
                continue
            allowed = None
            if len(parts) == 3 and parts[2].strip():
                allowed = {a.strip() for a in parts[2].split(",") if a.strip()}
            users[parts[0]] = (parts[1], allowed)
    return users


def parse_scopes(values):
    """Scope strings -> [(type, name, [actions])].

    A value may hold several space-separated scopes (OAuth2 style).  The name
    is everything between the first and the last colon, so names holding a
    colon (a registry host with a port) survive.
    """
    out = []
    for value in values:
        for scope in value.split():
            first, last = scope.find(":"), scope.rfind(":")
            if first <= 0 or last == first:
                raise ValueError("malformed scope %r" % scope)
            rtype, name, actions = scope[:first], scope[first + 1:last], scope[last + 1:]
            out.append((rtype, name, [a for a in actions.split(",") if a]))
    return out


class TokenServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, args):
        super().__init__(addr, Handler)
        self.args = args
        self.key, self.cert = load_or_make_signer(args.key, args.cert)
        self.x5c = base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode("ascii")
        self.lock = threading.Lock()
        self.refresh_tokens = {}  # refresh token -> user name
        self.log_file = open(args.log, "a", buffering=1, encoding="utf-8") if args.log else sys.stderr

    def users(self):
        # Re-read per request so tests may add users while the server runs.
        return load_users(self.args.users)

    def log(self, line):
        with self.lock:
            self.log_file.write("%s %s\n" % (rfc3339(time.time()), line))

    def make_token(self, subject, service, access):
        now = int(time.time())
        lifetime = self.args.lifetime
        claims = {
            "iss": self.args.issuer,
            "sub": subject,
            "aud": service,
            # distribution accepts tokens for 60 s past `exp` (clock-skew
            # leeway); --exp-skew moves `exp` back so a short lifetime is
            # really short at the registry.
            "exp": now + lifetime - self.args.exp_skew,
            "nbf": now - 1,
            "iat": now,
            "jti": secrets.token_hex(16),
            "access": access,
        }
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self.x5c]}
        signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "." +
                         b64url(json.dumps(claims, separators=(",", ":")).encode()))
        signature = self.key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature), now, lifetime


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "paddle-test-token/1"

    # The standard per-request log line would go to stderr; we write our own.
    def log_message(self, fmt, *args):
        pass

    def send_json(self, code, body, extra_headers=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def deny(self, why, note):
        self.server.log("%s %s -> 401 (%s)" % (self.command, self.path.split("?")[0], note))
        self.send_json(401, {"errors": [{"code": "UNAUTHORIZED", "message": why}],
                             "error": "invalid_grant", "error_description": why},
                       [("WWW-Authenticate", 'Basic realm="paddle-test-token"')])

    def check_password(self, user, password):
        entry = self.server.users().get(user)
        return entry is not None and secrets.compare_digest(entry[0], password)

    def grant(self, user, scopes):
        """Access list for `user` (None = anonymous) asking for `scopes`."""
        if user is None:
            allowed = {"pull"} if self.server.args.anonymous_pull else set()
        else:
            entry = self.server.users().get(user)
            allowed = entry[1] if entry and entry[1] is not None else None  # None: all
        access = []
        for rtype, name, actions in scopes:
            granted = actions if allowed is None else [a for a in actions if a in allowed]
            if granted:
                access.append({"type": rtype, "name": name, "actions": granted})
        return access

    def issue(self, user, service, scopes, offline, oauth):
        service = service or self.server.args.service
        access = self.grant(user, scopes)
        token, now, lifetime = self.server.make_token(user or "", service, access)
        body = {"access_token": token, "expires_in": lifetime, "issued_at": rfc3339(now)}
        if not oauth:
            body["token"] = token
        else:
            body["scope"] = " ".join("%s:%s:%s" % (a["type"], a["name"], ",".join(a["actions"]))
                                     for a in access)
        if offline and user is not None:
            refresh = secrets.token_urlsafe(24)
            with self.server.lock:
                self.server.refresh_tokens[refresh] = user
            body["refresh_token"] = refresh
        granted = ";".join("%s:%s:%s" % (a["type"], a["name"], ",".join(a["actions"])) for a in access)
        asked = ";".join("%s:%s:%s" % (t, n, ",".join(a)) for t, n, a in scopes)
        self.server.log("%s /token -> 200 user=%s service=%s asked=%s granted=%s%s" % (
            self.command, user or "-", service, asked or "-", granted or "-",
            " refresh_token_issued" if "refresh_token" in body else ""))
        self.send_json(200, body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/token":
            self.server.log("GET %s -> 404" % url.path)
            self.send_json(404, {"errors": [{"code": "NOT_FOUND", "message": "no such endpoint"}]})
            return
        query = urllib.parse.parse_qs(url.query)
        try:
            scopes = parse_scopes(query.get("scope", []))
        except ValueError as e:
            self.server.log("GET /token -> 400 (%s)" % e)
            self.send_json(400, {"errors": [{"code": "INVALID_SCOPE", "message": str(e)}]})
            return
        user = None
        auth = self.headers.get("Authorization", "")
        if auth:
            kind, _, cred = auth.partition(" ")
            if kind.lower() != "basic":
                self.deny("unsupported authorization scheme", "bad scheme")
                return
            try:
                name, _, password = base64.b64decode(cred.strip()).decode("utf-8").partition(":")
            except Exception:
                self.deny("malformed basic credentials", "malformed credentials")
                return
            if not self.check_password(name, password):
                self.deny("authentication failed", "bad credentials for user=%s" % name)
                return
            user = name
        offline = query.get("offline_token", ["false"])[0].lower() == "true"
        self.issue(user, query.get("service", [""])[0], scopes, offline, oauth=False)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if url.path != "/token":
            self.server.log("POST %s -> 404" % url.path)
            self.send_json(404, {"errors": [{"code": "NOT_FOUND", "message": "no such endpoint"}]})
            return
        form = urllib.parse.parse_qs(raw.decode("utf-8", "replace"))
        field = lambda k: form.get(k, [""])[0]
        try:
            scopes = parse_scopes(form.get("scope", []))
        except ValueError as e:
            self.server.log("POST /token -> 400 (%s)" % e)
            self.send_json(400, {"error": "invalid_scope", "error_description": str(e)})
            return
        grant = field("grant_type")
        if grant == "password":
            user = field("username")
            if not self.check_password(user, field("password")):
                self.deny("authentication failed", "bad credentials for user=%s" % user)
                return
        elif grant == "refresh_token":
            with self.server.lock:
                user = self.server.refresh_tokens.get(field("refresh_token"))
            if user is None:
                self.deny("unknown refresh token", "unknown refresh token")
                return
        else:
            self.server.log("POST /token -> 400 (grant_type=%s)" % (grant or "-"))
            self.send_json(400, {"error": "unsupported_grant_type"})
            return
        # A refresh grant keeps using the refresh token it came with, so only
        # a password grant asking for offline access gets a new one.
        offline = grant == "password" and field("access_type") == "offline"
        self.issue(user, field("service"), scopes, offline, oauth=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0 picks a free one)")
    p.add_argument("--port-file", help="write the bound port here once listening")
    p.add_argument("--users", help="users file (user:password[:actions] lines)")
    p.add_argument("--key", required=True, help="RSA signing key (PEM); made if missing")
    p.add_argument("--cert", required=True, help="signing certificate (PEM); made if missing")
    p.add_argument("--issuer", default="paddle-test-issuer")
    p.add_argument("--service", default="paddle-test-registry", help="audience when the request names none")
    p.add_argument("--lifetime", type=int, default=300, help="token lifetime in seconds (expires_in)")
    p.add_argument("--exp-skew", type=int, default=0,
                   help="subtract this from the exp claim (60 cancels distribution's leeway)")
    p.add_argument("--anonymous-pull", action="store_true", help="grant pull to anonymous callers")
    p.add_argument("--log", help="request log file (default stderr)")
    args = p.parse_args()

    host, _, port = args.listen.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1"):
        p.error("only loopback addresses are allowed")
    server = TokenServer((host, int(port)), args)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % server.server_address[1])
        os.replace(tmp, args.port_file)
    server.log("listening on %s:%d" % (host, server.server_address[1]))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
