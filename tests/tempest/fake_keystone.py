"""A minimal fake Keystone v3 for running tempest against kiln-server (standard library only).

Tempest insists on an identity service: every client asks it for a token and reads the service
catalog from the token body to find the endpoint of its service. Kiln has no Keystone (it runs
here with auth_strategy = noauth and ignores tokens), so this server answers just what tempest's
KeystoneV3AuthProvider and its pre-provisioned credentials touch:

  GET  /, /v3                   version discovery
  POST /v3/auth/tokens          any user name and password; project, system or unscoped token;
                                201 with X-Subject-Token and a catalog whose "baremetal" entry
                                is the kiln-server URL and whose "identity" entry is this server
  GET  /v3/auth/tokens          validation of the token in X-Subject-Token (200 or 404)
  HEAD /v3/auth/tokens          the same without a body
  DELETE /v3/auth/tokens        revocation (204; tokens never expire here anyway)

Everything else answers 404 in Keystone's error format. Nothing is checked: any password is
accepted, and the roles in the token are the names configured for the user (admin by default).

Run it on its own with `python3 fake_keystone.py --baremetal-url URL [--port-file FILE]`, or
import FakeKeystone and call start()/stop().
"""

import argparse
import datetime
import http.server
import json
import os
import sys
import threading
import uuid

DEFAULT_DOMAIN = {"id": "default", "name": "Default"}
REGION = "RegionOne"
TOKEN_LIFETIME = datetime.timedelta(hours=12)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _iso(moment):
    # Keystone's format: 2015-11-09T01:42:57.527363Z (tempest parses both with and without
    # fractional seconds).
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _stable_id(kind, name):
    """A fixed hex id per (kind, name), so repeated tokens of one user agree."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "fake-keystone/%s/%s" % (kind, name)).hex


class FakeKeystone:
    """The server: a ThreadingHTTPServer on host:port (port 0 picks a free port)."""

    def __init__(self, baremetal_url, host="127.0.0.1", port=0, roles=None, log=None):
        self.baremetal_url = baremetal_url.rstrip("/")
        self.roles = roles or ["admin", "member", "reader"]
        self.tokens = {}
        self.lock = threading.Lock()
        self.log = log
        handler = type("Handler", (_Handler,), {"keystone": self})
        self.httpd = http.server.ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.thread = None

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=10)

    # --- documents ---------------------------------------------------------------------

    def version_v3(self):
        return {
            "id": "v3.14",
            "status": "stable",
            "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": self.url + "/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}],
        }

    def catalog(self):
        def entry(service_type, name, url):
            sid = _stable_id("service", service_type)
            return {
                "id": sid,
                "type": service_type,
                "name": name,
                "endpoints": [
                    {"id": _stable_id("endpoint", "%s/%s" % (service_type, interface)),
                     "interface": interface, "region": REGION, "region_id": REGION,
                     "url": url}
                    for interface in ("public", "internal", "admin")
                ],
            }
        return [entry("identity", "keystone", self.url + "/v3"),
                entry("baremetal", "ironic", self.baremetal_url)]

    def issue_token(self, request):
        """(status, body, token id) for a POST /v3/auth/tokens body."""
        auth = request.get("auth") if isinstance(request, dict) else None
        identity = auth.get("identity") if isinstance(auth, dict) else None
        if not isinstance(identity, dict):
            return 400, _error(400, "Bad Request", "Expecting to find identity in auth."), None
        methods = identity.get("methods") or []
        user = None
        if "password" in methods:
            user = ((identity.get("password") or {}).get("user")) or {}
        elif "token" in methods:
            old = self.tokens.get(((identity.get("token") or {}).get("id")) or "")
            if old is None:
                return 404, _error(404, "Not Found", "Could not find token."), None
            user = {"name": old["user"]["name"]}
        else:
            return 401, _error(401, "Unauthorized",
                               "The request you have made requires authentication."), None
        name = user.get("name") or user.get("id") or "admin"
        user_domain = user.get("domain") or {}
        domain = {"id": user_domain.get("id") or DEFAULT_DOMAIN["id"],
                  "name": user_domain.get("name") or DEFAULT_DOMAIN["name"]}
        issued = _now()
        token = {
            "methods": methods,
            "issued_at": _iso(issued),
            "expires_at": _iso(issued + TOKEN_LIFETIME),
            "audit_ids": [uuid.uuid4().hex[:22]],
            "user": {"id": user.get("id") or _stable_id("user", name), "name": name,
                     "domain": domain, "password_expires_at": None},
            "roles": [{"id": _stable_id("role", r), "name": r} for r in self.roles],
            "is_domain": False,
        }
        scope = auth.get("scope") or {}
        if "project" in scope:
            project = scope["project"] or {}
            pname = project.get("name") or project.get("id") or "admin"
            pdomain = project.get("domain") or {}
            token["project"] = {
                "id": project.get("id") or _stable_id("project", pname),
                "name": pname,
                "domain": {"id": pdomain.get("id") or DEFAULT_DOMAIN["id"],
                           "name": pdomain.get("name") or DEFAULT_DOMAIN["name"]},
            }
        elif "system" in scope:
            token["system"] = {"all": True}
        elif "domain" in scope:
            d = scope["domain"] or {}
            token["domain"] = {"id": d.get("id") or DEFAULT_DOMAIN["id"],
                               "name": d.get("name") or DEFAULT_DOMAIN["name"]}
        else:
            token["roles"] = []
        if token.get("project") or token.get("system") or token.get("domain"):
            token["catalog"] = self.catalog()
        token_id = "fake-" + uuid.uuid4().hex
        with self.lock:
            self.tokens[token_id] = token
        return 201, {"token": token}, token_id


def _error(code, title, message):
    return {"error": {"code": code, "title": title, "message": message}}


class _Handler(http.server.BaseHTTPRequestHandler):
    keystone = None  # set per server by FakeKeystone
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if self.keystone.log is not None:
            self.keystone.log.write("%s %s\n" % (_iso(_now()), fmt % args))
            self.keystone.log.flush()

    def _send(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Vary", "X-Auth-Token")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _path(self):
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            return None

    def do_GET(self):
        path = self._path()
        ks = self.keystone
        if path == "/":
            self._send(300, {"versions": {"values": [ks.version_v3()]}})
        elif path == "/v3":
            self._send(200, {"version": ks.version_v3()})
        elif path == "/v3/auth/tokens":
            token = ks.tokens.get(self.headers.get("X-Subject-Token") or "")
            if token is None:
                self._send(404, _error(404, "Not Found", "Could not find token."))
            else:
                self._send(200, {"token": token},
                           {"X-Subject-Token": self.headers.get("X-Subject-Token")})
        elif path == "/v3/auth/catalog":
            self._send(200, {"catalog": ks.catalog(), "links": {"self": ks.url + path}})
        else:
            self._send(404, _error(404, "Not Found", "The resource could not be found."))

    do_HEAD = do_GET

    def do_POST(self):
        if self._path() != "/v3/auth/tokens":
            self._read_json()
            self._send(404, _error(404, "Not Found", "The resource could not be found."))
            return
        request = self._read_json()
        if request is None:
            self._send(400, _error(400, "Bad Request", "Malformed JSON body."))
            return
        status, body, token_id = self.keystone.issue_token(request)
        self._send(status, body, {"X-Subject-Token": token_id} if token_id else None)

    def do_DELETE(self):
        if self._path() == "/v3/auth/tokens":
            with self.keystone.lock:
                self.keystone.tokens.pop(self.headers.get("X-Subject-Token") or "", None)
            self._send(204)
        else:
            self._send(404, _error(404, "Not Found", "The resource could not be found."))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baremetal-url", required=True, help="kiln-server URL for the catalog")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the listening port here")
    args = parser.parse_args(argv)
    server = FakeKeystone(args.baremetal_url, host=args.host, port=args.port, log=sys.stderr)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % server.port)
        os.replace(tmp, args.port_file)
    sys.stderr.write("fake keystone on %s, baremetal at %s\n" % (server.url, args.baremetal_url))
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
