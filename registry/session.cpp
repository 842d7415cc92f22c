#include "registry/session.hpp"

#include "oci/reference.hpp"
#include "registry/error.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

namespace registry {

using util::Error;
using util::ErrorKind;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A token realm's scheme and host[:port], through the one URL parser ("" for text that
// is not an absolute URL).
std::string scheme_of(const std::string& url) {
  auto u = util::parse_url(url);
  return u ? u->scheme : std::string();
}

std::string host_of(const std::string& url) {
  auto u = util::parse_url(url);
  return u ? u->authority() : std::string();
}

} // namespace

std::string pull_scope(const std::string& repo) {
  return "repository:" + repo + ":pull";
}
std::string push_scope(const std::string& repo) {
  return "repository:" + repo + ":pull,push";
}

Session::Session(std::string host, std::shared_ptr<Transport> http, ClientOptions options, Credential credential,
                 Stats& stats)
    : m_host(std::move(host)), m_endpoint(m_host == oci::k_docker_hub ? std::string(oci::k_docker_hub_api) : m_host),
      m_opt(std::move(options)), m_transport(std::move(http), registry::retry_options(m_opt), &stats.retries),
      m_cred(std::move(credential)), m_stats(stats) {}

void Session::log(int level, const std::string& line) const {
  if (m_opt.log) {
    m_opt.log(level, line);
  }
}

TlsPolicy Session::tls() const {
  TlsPolicy p;
  p.verify = !m_opt.insecure.count(m_host);
  p.ca_file = m_opt.ca_file;
  return p;
}

std::string Session::base_url() const {
  return m_scheme + "://" + m_endpoint;
}

std::string Session::absolute(const std::string& location) const {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) {
    return location;
  }
  return base_url() + (location.empty() || location[0] != '/' ? "/" : "") + location;
}

// ---- requests through the transport ----

std::optional<Response> Session::call(const Call& c, const std::string& what) {
  try {
    return m_transport.call(c);
  } catch (const TransportFailure& f) {
    fail_transport(f, what);
  }
}

// ---- errors ----

void Session::fail_transport(const TransportFailure& f, const std::string& what) const {
  std::string where = what + ": " + m_host;
  if (f.tls) {
    throw Error(ErrorKind::network, where + ": TLS failed: " + f.what(),
                "trust the registry's CA with --ca-file CA.pem (or add it to /etc/ssl/certs); for a local test "
                "registry without TLS or a trusted certificate, pass --insecure-registry " +
                    m_host + " (or --insecure)");
  }
  if (f.curl_code == 6) {
    throw Error(ErrorKind::network, where + ": unknown host (" + f.what() + ")",
                "check the registry name in the reference");
  }
  if (f.curl_code == 28) {
    throw Error(ErrorKind::network,
                where + ": timed out or stalled (" + f.what() + ")" +
                    (m_opt.max_attempts > 1 ? " after " + std::to_string(m_opt.max_attempts) + " attempts" : ""),
                "check the network; --timeout sets how long a stalled transfer may wait");
  }
  throw Error(ErrorKind::network,
              where + ": " + f.what() +
                  (f.retryable && m_opt.max_attempts > 1
                       ? " (gave up after " + std::to_string(m_opt.max_attempts) + " attempts)"
                       : ""),
              "is the registry running and reachable? --retries sets how often to try");
}

void Session::fail_status(const Response& r, const std::string& what, const std::string& scope) const {
  ErrorBody body = parse_error_body(r.body);
  std::string msg = what + ": " + m_host + " answered HTTP " + std::to_string(r.status) +
                    (body.summary.empty() ? "" : " (" + body.summary + ")");
  switch (error_kind(r.status, body.codes)) {
  case ErrorKind::auth:
    if (m_cred.anonymous() && !m_cred.failure.empty()) {
      throw RegistryError(r.status, body.codes, msg + "; no credentials were sent: " + m_cred.failure,
                          "check the credential helper (run it by hand: echo " + m_host +
                              " | docker-credential-NAME get), or run `paddle-image login " + m_host + "`");
    }
    if (m_cred.anonymous()) {
      throw RegistryError(r.status, body.codes, msg + "; no credentials were found for " + m_host,
                          "run `paddle-image login " + m_host + "` or pass --username with --password-stdin");
    }
    throw RegistryError(r.status, body.codes,
                        msg + "; the credentials from " + m_cred.source + " were refused" +
                            (scope.empty() ? "" : " for " + scope),
                        "check them or run `paddle-image login " + m_host + "` again");
  case ErrorKind::integrity:
    throw RegistryError(r.status, body.codes, msg, "the uploaded bytes do not match their digest; the source changed?");
  default:
    break;
  }
  if (r.status == 429) {
    throw RegistryError(r.status, body.codes, msg + " after " + std::to_string(m_opt.max_attempts) + " attempts",
                        "the registry is rate limiting; try later or raise --retries");
  }
  throw RegistryError(r.status, body.codes, msg);
}

// ---- ping and scheme ----

void Session::ping() {
  std::lock_guard<std::mutex> g(m_mutex);
  if (m_pinged) {
    return;
  }
  // Plain HTTP after https for a host the flags name, and for a loopback host (as Docker
  // and go-containerregistry allow: a registry on the build machine itself).
  std::vector<std::string> schemes = {"https"};
  if (m_opt.insecure.count(m_host) > 0 || util::is_loopback_authority(m_host)) {
    schemes.push_back("http");
  }
  for (std::size_t si = 0; si < schemes.size(); ++si) {
    const std::string& scheme = schemes[si];
    const bool more_schemes = si + 1 < schemes.size();
    const std::string url = scheme + "://" + m_endpoint + "/v2/";
    Call c;
    c.tls = tls();
    c.make = [&] {
      Request req;
      req.url = url;
      if (more_schemes) {
        // Probing TLS on a host that may speak plain HTTP: a server that never
        // answers a TLS hello should not cost the full connect timeout.
        req.connect_timeout_s = 3;
      }
      return req;
    };
    c.status_reason = [&](const Response& r) { return "HTTP " + std::to_string(r.status) + " from " + url; };
    c.fall_back = [&](const TransportFailure& f) {
      // A server that does not speak TLS at all (a plain-HTTP registry): the handshake
      // fails, the reply is empty or cut, or nothing answers in time.
      bool not_tls =
          f.curl_code == 35 || f.curl_code == 52 || f.curl_code == 56 || f.curl_code == 55 || f.curl_code == 28;
      // With the flag any TLS failure falls back; a loopback host without it only when
      // no TLS server is there: a certificate that does not verify is reported as it is.
      bool flagged = m_opt.insecure.count(m_host) > 0;
      bool try_http = more_schemes && (not_tls || (flagged && f.tls));
      if (try_http) {
        log(1, m_host + ": no TLS (" + f.what() + "); using plain HTTP (" +
                   (m_opt.insecure.count(m_host) > 0 ? "--insecure" : "a loopback host") + ")");
      }
      return try_http;
    };
    std::optional<Response> r = call(c, "contacting the registry");
    if (!r) {
      continue;
    }
    if (r->status == 401) {
      for (const auto& ch : parse_challenges(r->headers.get("www-authenticate"))) {
        if (ch.scheme == "bearer" || (ch.scheme == "basic" && !m_challenge)) {
          m_challenge = ch;
        }
      }
    } else if (r->status != 200) {
      // Not an answer of the distribution API (whatever the status), so not a
      // RegistryError: the host serves something else.
      throw Error(ErrorKind::registry,
                  m_host + " does not serve the OCI distribution API: GET /v2/ answered HTTP " +
                      std::to_string(r->status),
                  "check the host name and port in the reference");
    }
    if (r->headers.get("docker-distribution-api-version") != "registry/2.0") {
      log(2, m_host + ": no Docker-Distribution-API-Version: registry/2.0 header; continuing");
    }
    m_scheme = scheme;
    m_pinged = true;
    log(2, m_host + ": " + scheme + ", HTTP/" + r->http_version + ", auth " +
               (m_challenge ? m_challenge->scheme : std::string("none")));
    return;
  }
}

void Session::verify_login() {
  ping();
  send(
      [&] {
        Request q;
        q.url = base_url() + "/v2/";
        return q;
      },
      "", "checking the credentials", {200});
}

// ---- auth ----

std::string Session::fetch_token(const std::string& scope) {
  std::string realm = m_challenge->params["realm"];
  if (realm.empty()) {
    throw Error(ErrorKind::registry, m_host + " asked for a bearer token but named no realm");
  }
  std::string realm_host = host_of(realm);
  bool send_secret = !m_cred.anonymous();
  if (scheme_of(realm) != "https" && send_secret && !m_opt.insecure.count(m_host) &&
      !util::is_loopback_authority(realm_host)) {
    throw Error(ErrorKind::auth,
                m_host + ": token realm " + scheme_of(realm) + "://" + realm_host +
                    " is not HTTPS; credentials are not sent over plain HTTP",
                "pass --insecure-registry " + m_host + " only if this is a trusted local registry");
  }
  std::string query = "service=" + util::percent_encode(m_challenge->params["service"]);
  std::size_t start = 0;
  while (start < scope.size()) {
    auto sp = scope.find(' ', start);
    std::string one = scope.substr(start, sp == std::string::npos ? std::string::npos : sp - start);
    query += "&scope=" + util::percent_encode(one);
    start = sp == std::string::npos ? scope.size() : sp + 1;
  }
  Call c;
  c.tls.verify = !(m_opt.insecure.count(realm_host) || (realm_host == m_host && m_opt.insecure.count(m_host)));
  c.tls.ca_file = m_opt.ca_file;
  c.make = [&] {
    Request req;
    if (!m_cred.identity_token.empty()) {
      req.method = "POST";
      req.url = realm;
      req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
      req.body = query + "&grant_type=refresh_token&client_id=paddle-image&refresh_token=" +
                 util::percent_encode(m_cred.identity_token);
    } else {
      req.url = util::with_query(realm, query);
      if (!m_cred.username.empty()) {
        req.headers.push_back("Authorization: Basic " + util::base64_encode(m_cred.username + ":" + m_cred.password));
      }
    }
    return req;
  };
  c.status_reason = [](const Response& r) { return "token server HTTP " + std::to_string(r.status); };
  Response r = *call(c, "getting a token for " + m_host + " from " + realm_host);
  // A token server speaks OAuth, not the distribution API: its body carries no OCI
  // error codes, so the status alone picks the kind.
  if (r.status == 401 || r.status == 403) {
    throw RegistryError(r.status, {},
                        "token server " + realm_host + " refused the credentials " +
                            (m_cred.anonymous() ? std::string("(none given)") : "from " + m_cred.source) + " for " +
                            m_host + " (HTTP " + std::to_string(r.status) + ")",
                        "check them or run `paddle-image login " + m_host + "` again");
  }
  if (r.status != 200) {
    throw RegistryError(r.status, {},
                        "token server " + realm_host + " answered HTTP " + std::to_string(r.status) + " for " + m_host);
  }
  TokenAnswer t;
  try {
    t = parse_token_response(r.body);
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::registry, "token server " + realm_host + " answered without a usable token for " + m_host +
                                         " (" + e.what() + ")");
  }
  m_tokens[scope] = Token{t.token, now_s() + t.lifetime_s};
  log(2, "token for " + scope + " from " + realm_host + ", valid " + std::to_string(std::int64_t(t.lifetime_s)) + " s");
  return t.token;
}

std::string Session::auth_header(const std::string& scope) {
  std::lock_guard<std::mutex> g(m_mutex);
  if (!m_challenge) {
    return {};
  }
  if (m_challenge->scheme == "basic") {
    if (m_cred.username.empty()) {
      return {};
    }
    return "Authorization: Basic " + util::base64_encode(m_cred.username + ":" + m_cred.password);
  }
  if (!m_cred.registry_token.empty()) {
    return "Authorization: Bearer " + m_cred.registry_token;
  }
  auto it = m_tokens.find(scope);
  if (it != m_tokens.end() && it->second.expires_at > now_s() + 5) {
    return "Authorization: Bearer " + it->second.value;
  }
  return "Authorization: Bearer " + fetch_token(scope);
}

void Session::forget_token(const std::string& scope) {
  std::lock_guard<std::mutex> g(m_mutex);
  m_tokens.erase(scope);
}

// ---- requests ----

Response Session::send(const std::function<Request()>& make, const std::string& scope, const std::string& what,
                       std::initializer_list<long> accept, bool raw) {
  ping();
  auto accepted = [&](long status) { return std::find(accept.begin(), accept.end(), status) != accept.end(); };
  bool refreshed = false;
  Call c;
  c.tls = tls();
  c.log_prefix = what + ": ";
  c.make = [&] {
    Request req = make();
    std::string auth = auth_header(scope);
    if (!auth.empty()) {
      req.headers.push_back(auth);
    }
    return req;
  };
  c.judge = [&](const Response& r) -> std::optional<Attempt::Verdict> {
    if (accepted(r.status)) {
      return Attempt::Verdict::finish;
    }
    if (r.status != 401 || refreshed) {
      return std::nullopt;
    }
    log(1, what + ": " + m_host + " answered 401; authenticating again");
    // Expired or missing token (or a repository that needs auth after an anonymous
    // ping): read the challenge again and get a fresh token once.
    refreshed = true;
    auto challenges = parse_challenges(r.headers.get("www-authenticate"));
    std::lock_guard<std::mutex> g(m_mutex);
    for (const auto& ch : challenges) {
      if (ch.scheme == "bearer" || ch.scheme == "basic") {
        m_challenge = ch;
        break;
      }
    }
    m_tokens.erase(scope);
    bool can_answer = m_challenge && !(m_challenge->scheme == "basic" && m_cred.username.empty());
    if (can_answer) {
      return Attempt::Verdict::again;
    }
    return std::nullopt;
  };
  Response r = *call(c, what);
  if (accepted(r.status) || raw) {
    return r;
  }
  fail_status(r, what, scope);
}

Response Session::perform_once(Request q, const std::string& scope) {
  std::string auth = auth_header(scope);
  if (!auth.empty()) {
    q.headers.push_back(auth);
  }
  return m_transport.perform_once(q, tls());
}

} // namespace registry
