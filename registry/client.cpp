#include "registry/client.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

namespace registry {

using util::Error;
using util::ErrorKind;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool retryable_status(long s) {
  return s == 408 || s == 429 || (s >= 500 && s != 501 && s != 505);
}

std::string with_query(const std::string& url, const std::string& kv) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + kv;
}

// "0-1234" -> 1235 (bytes the registry holds), -1 when absent or malformed.
// Distribution writes "0-0" for an empty upload, so that reads as 0.
std::int64_t range_end(const std::string& range) {
  auto dash = range.find('-');
  if (dash == std::string::npos) {
    return -1;
  }
  try {
    std::int64_t end = std::stoll(range.substr(dash + 1));
    return end == 0 ? 0 : end + 1;
  } catch (...) {
    return -1;
  }
}

// Registry error bodies: {"errors":[{"code":..., "message":...}]}.
std::string error_summary(const Response& r) {
  try {
    auto j = nlohmann::json::parse(r.body);
    std::vector<std::string> parts;
    for (const auto& e : j.at("errors")) {
      std::string p = e.value("code", "");
      std::string m = e.value("message", "");
      if (!m.empty()) {
        p += (p.empty() ? "" : ": ") + m;
      }
      parts.push_back(p);
    }
    return util::join(parts, "; ");
  } catch (...) {
    std::string b = r.body.substr(0, 200);
    for (char& c : b) {
      if (c == '\n' || c == '\r') {
        c = ' ';
      }
    }
    return b;
  }
}

std::string scheme_of(const std::string& url) {
  return url.substr(0, url.find("://"));
}

std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of("/?", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

} // namespace

std::string manifest_accept() {
  return std::string("Accept: ") + oci::media::k_manifest + ", " + oci::media::k_index + ", " +
         oci::media::k_docker_manifest + ", " + oci::media::k_docker_index;
}

std::string pull_scope(const std::string& repo) {
  return "repository:" + repo + ":pull";
}
std::string push_scope(const std::string& repo) {
  return "repository:" + repo + ":pull,push";
}

Registry::Registry(std::string host, std::shared_ptr<Transport> http, ClientOptions options, Credential credential,
                   Stats& stats)
    : m_host(std::move(host)), m_endpoint(m_host == "docker.io" ? "registry-1.docker.io" : m_host),
      m_http(std::move(http)), m_opt(std::move(options)), m_cred(std::move(credential)), m_stats(stats) {}

TlsPolicy Registry::tls() const {
  TlsPolicy p;
  p.verify = !m_opt.insecure.count(m_host);
  p.ca_file = m_opt.ca_file;
  return p;
}

std::string Registry::repo_url(const std::string& repo) const {
  return m_scheme + "://" + m_endpoint + "/v2/" + repo;
}

std::string Registry::absolute(const std::string& location) const {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) {
    return location;
  }
  return m_scheme + "://" + m_endpoint + (location.empty() || location[0] != '/' ? "/" : "") + location;
}

void Registry::backoff(int attempt, const Response* r, const std::string& why) {
  thread_local std::mt19937 rng{std::random_device{}()};
  double base = std::min(m_opt.backoff_max_s, m_opt.backoff_initial_s * std::pow(2.0, attempt - 1));
  double delay = base * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
  if (r) {
    std::string ra = r->headers.get("retry-after");
    if (!ra.empty()) {
      double after = -1;
      if (std::all_of(ra.begin(), ra.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        after = std::stod(ra);
      } else {
        std::tm tm{};
        if (strptime(ra.c_str(), "%a, %d %b %Y %H:%M:%S", &tm)) {
          after = static_cast<double>(timegm(&tm) - std::time(nullptr));
        }
      }
      if (after >= 0) {
        delay = std::min(std::max(after, 0.0), std::max(m_opt.backoff_max_s, 1.0));
      }
    }
  }
  ++m_stats.retries;
  if (m_opt.log) {
    std::string secs =
        std::to_string(std::lround(delay * 10) / 10) + "." + std::to_string(std::lround(delay * 10) % 10);
    m_opt.log(1, "retrying in " + secs + " s (attempt " + std::to_string(attempt + 1) + " of " +
                     std::to_string(m_opt.max_attempts) + "): " + why);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));
}

void Registry::fail_transport(const TransportFailure& f, const std::string& what) {
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

void Registry::fail_status(const Response& r, const std::string& what, const std::string& scope) {
  std::string detail = error_summary(r);
  std::string msg =
      what + ": " + m_host + " answered HTTP " + std::to_string(r.status) + (detail.empty() ? "" : " (" + detail + ")");
  if (r.status == 401 || r.status == 403) {
    if (m_cred.anonymous()) {
      throw Error(ErrorKind::auth, msg + "; no credentials were found for " + m_host,
                  "run `paddle-image login " + m_host + "` or pass --username with --password-stdin");
    }
    throw Error(ErrorKind::auth,
                msg + "; the credentials from " + m_cred.source + " were refused" +
                    (scope.empty() ? "" : " for " + scope),
                "check them or run `paddle-image login " + m_host + "` again");
  }
  if (r.status == 400 &&
      (detail.find("DIGEST_INVALID") != std::string::npos || detail.find("SIZE_INVALID") != std::string::npos)) {
    throw Error(ErrorKind::integrity, msg, "the uploaded bytes do not match their digest; the source changed?");
  }
  if (r.status == 429) {
    throw Error(ErrorKind::registry, msg + " after " + std::to_string(m_opt.max_attempts) + " attempts",
                "the registry is rate limiting; try later or raise --retries");
  }
  throw Error(ErrorKind::registry, msg);
}

void Registry::ping() {
  std::lock_guard<std::mutex> g(m_mutex);
  if (m_pinged) {
    return;
  }
  bool insecure = m_opt.insecure.count(m_host) > 0;
  std::vector<std::string> schemes = {"https"};
  if (insecure) {
    schemes.push_back("http");
  }
  for (std::size_t si = 0; si < schemes.size(); ++si) {
    const std::string& scheme = schemes[si];
    for (int attempt = 1;; ++attempt) {
      Request req;
      req.url = scheme + "://" + m_endpoint + "/v2/";
      if (si + 1 < schemes.size()) {
        // Probing TLS on a host that may speak plain HTTP: a server that never
        // answers a TLS hello should not cost the full connect timeout.
        req.connect_timeout_s = 3;
      }
      Response r;
      try {
        r = m_http->perform(req, tls());
      } catch (const TransportFailure& f) {
        bool try_http = si + 1 < schemes.size() && (f.tls || f.curl_code == 35 || f.curl_code == 52 ||
                                                    f.curl_code == 56 || f.curl_code == 55 || f.curl_code == 28);
        if (try_http) {
          if (m_opt.log) {
            m_opt.log(1, m_host + ": no TLS (" + f.what() + "); using plain HTTP (--insecure)");
          }
          break;
        }
        if (!f.retryable || attempt >= m_opt.max_attempts) {
          fail_transport(f, "contacting the registry");
        }
        backoff(attempt, nullptr, f.what());
        continue;
      }
      if (retryable_status(r.status) && attempt < m_opt.max_attempts) {
        backoff(attempt, &r, "HTTP " + std::to_string(r.status) + " from " + req.url);
        continue;
      }
      if (r.status == 401) {
        auto cs = parse_challenges(r.headers.get("www-authenticate"));
        for (const auto& c : cs) {
          if (c.scheme == "bearer" || (c.scheme == "basic" && !m_challenge)) {
            m_challenge = c;
          }
        }
      } else if (r.status != 200) {
        throw Error(ErrorKind::registry,
                    m_host + " does not serve the OCI distribution API: GET /v2/ answered HTTP " +
                        std::to_string(r.status),
                    "check the host name and port in the reference");
      }
      if (m_opt.log && r.headers.get("docker-distribution-api-version") != "registry/2.0") {
        m_opt.log(2, m_host + ": no Docker-Distribution-API-Version: registry/2.0 header; continuing");
      }
      m_scheme = scheme;
      m_pinged = true;
      if (m_opt.log) {
        m_opt.log(2, m_host + ": " + scheme + ", HTTP/" + r.http_version + ", auth " +
                         (m_challenge ? m_challenge->scheme : std::string("none")));
      }
      return;
    }
  }
}

void Registry::verify_login() {
  ping();
  send(
      [&] {
        Request q;
        q.url = m_scheme + "://" + m_endpoint + "/v2/";
        return q;
      },
      "", "checking the credentials", {200});
}

std::string Registry::fetch_token(const std::string& scope) {
  std::string realm = m_challenge->params["realm"];
  if (realm.empty()) {
    throw Error(ErrorKind::registry, m_host + " asked for a bearer token but named no realm");
  }
  std::string realm_host = host_of(realm);
  bool send_secret = !m_cred.anonymous();
  if (scheme_of(realm) != "https" && send_secret && !m_opt.insecure.count(m_host)) {
    throw Error(ErrorKind::auth,
                m_host + ": token realm " + scheme_of(realm) + "://" + realm_host +
                    " is not HTTPS; credentials are not sent over plain HTTP",
                "pass --insecure-registry " + m_host + " only if this is a trusted local registry");
  }
  std::string query = "service=" + url_escape(m_challenge->params["service"]);
  std::size_t start = 0;
  while (start < scope.size()) {
    auto sp = scope.find(' ', start);
    std::string one = scope.substr(start, sp == std::string::npos ? std::string::npos : sp - start);
    query += "&scope=" + url_escape(one);
    start = sp == std::string::npos ? scope.size() : sp + 1;
  }
  TlsPolicy tp;
  tp.verify = !(m_opt.insecure.count(realm_host) || (realm_host == m_host && m_opt.insecure.count(m_host)));
  tp.ca_file = m_opt.ca_file;
  for (int attempt = 1;; ++attempt) {
    Request req;
    if (!m_cred.identity_token.empty()) {
      req.method = "POST";
      req.url = realm;
      req.headers.push_back("Content-Type: application/x-www-form-urlencoded");
      req.body =
          query + "&grant_type=refresh_token&client_id=paddle-image&refresh_token=" + url_escape(m_cred.identity_token);
    } else {
      req.url = with_query(realm, query);
      if (!m_cred.username.empty()) {
        req.headers.push_back("Authorization: Basic " + util::base64_encode(m_cred.username + ":" + m_cred.password));
      }
    }
    Response r;
    try {
      r = m_http->perform(req, tp);
    } catch (const TransportFailure& f) {
      if (!f.retryable || attempt >= m_opt.max_attempts) {
        fail_transport(f, "getting a token for " + m_host + " from " + realm_host);
      }
      backoff(attempt, nullptr, f.what());
      continue;
    }
    if (retryable_status(r.status) && attempt < m_opt.max_attempts) {
      backoff(attempt, &r, "token server HTTP " + std::to_string(r.status));
      continue;
    }
    if (r.status == 401 || r.status == 403) {
      throw Error(ErrorKind::auth,
                  "token server " + realm_host + " refused the credentials " +
                      (m_cred.anonymous() ? std::string("(none given)") : "from " + m_cred.source) + " for " + m_host +
                      " (HTTP " + std::to_string(r.status) + ")",
                  "check them or run `paddle-image login " + m_host + "` again");
    }
    if (r.status != 200) {
      throw Error(ErrorKind::registry,
                  "token server " + realm_host + " answered HTTP " + std::to_string(r.status) + " for " + m_host);
    }
    try {
      auto j = nlohmann::json::parse(r.body);
      std::string tok = j.value("token", "");
      if (tok.empty()) {
        tok = j.value("access_token", "");
      }
      if (tok.empty()) {
        throw std::runtime_error("no token");
      }
      double life = j.contains("expires_in") && j["expires_in"].is_number() ? j["expires_in"].get<double>() : 60.0;
      m_tokens[scope] = Token{tok, now_s() + std::max(life, 1.0)};
      if (m_opt.log) {
        m_opt.log(2, "token for " + scope + " from " + realm_host + ", valid " + std::to_string(int(life)) + " s");
      }
      return tok;
    } catch (const std::exception&) {
      throw Error(ErrorKind::registry, "token server " + realm_host + " answered without a token for " + m_host);
    }
  }
}

std::string Registry::auth_header(const std::string& scope, bool force_refresh) {
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
  if (!force_refresh && it != m_tokens.end() && it->second.expires_at > now_s() + 5) {
    return "Authorization: Bearer " + it->second.value;
  }
  return "Authorization: Bearer " + fetch_token(scope);
}

Response Registry::send(const std::function<Request()>& make, const std::string& scope, const std::string& what,
                        std::initializer_list<long> accept, bool raw) {
  ping();
  bool refreshed = false;
  for (int attempt = 1;; ++attempt) {
    Request req = make();
    std::string auth = auth_header(scope, false);
    if (!auth.empty()) {
      req.headers.push_back(auth);
    }
    Response r;
    try {
      r = m_http->perform(req, tls());
    } catch (const TransportFailure& f) {
      if (!f.retryable || attempt >= m_opt.max_attempts) {
        fail_transport(f, what);
      }
      backoff(attempt, nullptr, what + ": " + f.what());
      continue;
    }
    if (std::find(accept.begin(), accept.end(), r.status) != accept.end()) {
      return r;
    }
    if (r.status == 401 && !refreshed) {
      if (m_opt.log) {
        m_opt.log(1, what + ": " + m_host + " answered 401; authenticating again");
      }
      // Expired or missing token (or a repository that needs auth after an
      // anonymous ping): read the challenge again and get a fresh token once.
      refreshed = true;
      auto cs = parse_challenges(r.headers.get("www-authenticate"));
      bool can_answer = false;
      {
        std::lock_guard<std::mutex> g(m_mutex);
        for (const auto& c : cs) {
          if (c.scheme == "bearer" || c.scheme == "basic") {
            m_challenge = c;
            break;
          }
        }
        m_tokens.erase(scope);
        can_answer = m_challenge && !(m_challenge->scheme == "basic" && m_cred.username.empty());
      }
      if (can_answer) {
        --attempt;
        continue;
      }
    }
    if (retryable_status(r.status) && attempt < m_opt.max_attempts) {
      backoff(attempt, &r, what + ": HTTP " + std::to_string(r.status));
      continue;
    }
    if (raw) {
      return r;
    }
    fail_status(r, what, scope);
  }
}

std::optional<std::int64_t> Registry::blob_size(const std::string& repo, const oci::Digest& d) {
  Response r = send(
      [&] {
        Request q;
        q.method = "HEAD";
        q.url = repo_url(repo) + "/blobs/" + d.str();
        return q;
      },
      pull_scope(repo), "checking blob " + d.str() + " in " + repo, {200, 404});
  if (r.status == 404) {
    return std::nullopt;
  }
  std::string len = r.headers.get("content-length");
  return len.empty() ? std::int64_t{-1} : std::stoll(len);
}

void Registry::fetch_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t offset,
                          const std::function<void(const char*, std::size_t)>& sink,
                          const std::function<void()>& restart, const Progress& progress) {
  std::int64_t pos = offset;
  std::int64_t last_report = 0;
  send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/blobs/" + d.digest.str();
        if (pos > 0) {
          q.headers.push_back("Range: bytes=" + std::to_string(pos) + "-");
          if (m_opt.log) {
            m_opt.log(1, "resuming download of " + d.digest.str() + " at byte " + std::to_string(pos));
          }
        }
        q.on_body_start = [&](long status) {
          if (status == 200 && pos > 0) {
            restart();
            pos = 0;
          }
        };
        q.sink = [&](const char* data, std::size_t len) {
          sink(data, len);
          pos += static_cast<std::int64_t>(len);
          m_stats.bytes_downloaded += static_cast<std::int64_t>(len);
          if (progress && (pos - last_report >= (1 << 20) || pos == d.size)) {
            last_report = pos;
            progress(d.digest, pos, d.size);
          }
          return true;
        };
        return q;
      },
      pull_scope(repo), "downloading " + d.digest.str() + " from " + repo, {200, 206});
}

void Registry::download_blob(const std::string& repo, const oci::Descriptor& d, oci::BlobStore& store,
                             const Progress& progress) {
  auto tmp = store.begin_write();
  download_into(repo, d, *tmp, progress);
  store.commit(*tmp, d.digest);
}

std::string Registry::read_blob(const std::string& repo, const oci::Descriptor& d, std::int64_t max_size) {
  if (d.size > max_size) {
    throw Error(ErrorKind::input, d.digest.str() + " in " + repo + " is " + std::to_string(d.size) +
                                      " bytes, more than expected for a config");
  }
  std::string out;
  fetch_blob(
      repo, d, 0,
      [&](const char* data, std::size_t len) {
        out.append(data, len);
        if (static_cast<std::int64_t>(out.size()) > d.size) {
          throw Error(ErrorKind::integrity, m_host + "/" + repo + " served more than " + std::to_string(d.size) +
                                                " bytes for " + d.digest.str());
        }
      },
      [&] { out.clear(); });
  std::string got = util::sha256_hex(out);
  if (got != d.digest.hex) {
    throw Error(ErrorKind::integrity,
                m_host + "/" + repo + " served content for " + d.digest.str() + " hashing to sha256:" + got,
                "the registry or a proxy corrupted the blob");
  }
  return out;
}

void Registry::download_into(const std::string& repo, const oci::Descriptor& d, util::AtomicFile& tmp_file,
                             const Progress& progress) {
  util::AtomicFile* tmp = &tmp_file;
  auto hash = std::make_unique<util::Sha256>();
  std::int64_t n = 0;
  // libcurl hands over a few KiB at a time; hashing and writing go in 1 MiB batches.
  constexpr std::size_t k_batch = 1u << 20;
  std::string batch;
  batch.reserve(k_batch);
  auto flush = [&] {
    hash->update(batch.data(), batch.size());
    tmp->write(batch.data(), batch.size());
    batch.clear();
  };
  fetch_blob(
      repo, d, 0,
      [&](const char* data, std::size_t len) {
        n += static_cast<std::int64_t>(len);
        if (n > d.size) {
          throw Error(ErrorKind::integrity, m_host + "/" + repo + " served more than the " + std::to_string(d.size) +
                                                " bytes of " + d.digest.str());
        }
        batch.append(data, len);
        if (batch.size() >= k_batch) {
          flush();
        }
      },
      [&] {
        batch.clear();
        if (::ftruncate(tmp->fd(), 0) != 0 || ::lseek(tmp->fd(), 0, SEEK_SET) != 0) {
          util::throw_errno("truncating " + tmp->temp_path().string());
        }
        hash = std::make_unique<util::Sha256>();
        n = 0;
      },
      progress);
  flush();
  std::string got = hash->finish_hex();
  if (n != d.size || got != d.digest.hex) {
    throw Error(ErrorKind::integrity,
                m_host + "/" + repo + " served content for " + d.digest.str() + " that does not match it (got " +
                    std::to_string(n) + " bytes hashing to sha256:" + got + ")",
                "the registry or a proxy corrupted the blob; nothing was stored. Try again, or check the registry");
  }
  ++m_stats.blobs_downloaded;
}

bool Registry::mount_blob(const std::string& repo, const oci::Digest& d, const std::string& from_repo) {
  Response r = send(
      [&] {
        Request q;
        q.method = "POST";
        q.url = repo_url(repo) + "/blobs/uploads/?mount=" + url_escape(d.str()) + "&from=" + url_escape(from_repo);
        return q;
      },
      push_scope(repo) + " " + pull_scope(from_repo), "mounting " + d.str() + " from " + from_repo, {201, 202});
  if (r.status == 201) {
    return true;
  }
  // 202: the registry opened an upload session instead; cancel it (best effort).
  std::string loc = r.headers.get("location");
  if (!loc.empty()) {
    try {
      send(
          [&] {
            Request q;
            q.method = "DELETE";
            q.url = absolute(loc);
            return q;
          },
          push_scope(repo), "cancelling an upload", {204, 404, 405}, true);
    } catch (const Error& e) {
      // Best effort: an abandoned session expires on its own in the registry, and the
      // caller goes on to upload the blob, so this failure changes nothing.
      if (m_opt.log) {
        m_opt.log(2, "cancelling the upload session " + loc + " failed (ignored): " + e.what());
      }
    }
  }
  return false;
}

namespace {

// Wraps a reader: counts bytes, reports progress, and when the stream starts at 0,
// hashes it and checks size and digest at its end (the source must not change).
Reader verifying(Reader inner, const oci::Descriptor& d, std::int64_t offset, std::int64_t limit, Stats& stats,
                 const Progress& progress, const std::string& host) {
  struct State {
    std::int64_t pos;
    std::int64_t sent = 0;
    std::int64_t last = 0;
    std::unique_ptr<util::Sha256> hash;
  };
  auto st = std::make_shared<State>();
  Stats* counters = &stats;
  st->pos = offset;
  if (offset == 0 && limit < 0) {
    st->hash = std::make_unique<util::Sha256>();
  }
  return [st, counters, inner, d, limit, progress, host](char* buf, std::size_t len) -> std::size_t {
    if (limit >= 0) {
      len = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(len), limit - st->sent));
      if (len == 0) {
        return 0;
      }
    }
    std::size_t n = inner(buf, len);
    if (n == 0 && limit >= 0 && st->sent < limit) {
      throw Error(ErrorKind::io, "the source of " + d.digest.str() + " ended early");
    }
    if (st->hash) {
      st->hash->update(buf, n);
    }
    st->pos += static_cast<std::int64_t>(n);
    st->sent += static_cast<std::int64_t>(n);
    counters->bytes_uploaded += static_cast<std::int64_t>(n);
    if (progress && (st->pos - st->last >= (1 << 20) || st->pos == d.size)) {
      st->last = st->pos;
      progress(d.digest, st->pos, d.size);
    }
    if (n == 0 && st->hash) {
      std::string got = st->hash->finish_hex();
      st->hash.reset();
      if (st->pos != d.size || got != d.digest.hex) {
        throw Error(ErrorKind::integrity,
                    "the local copy of " + d.digest.str() + " does not match its digest (read " +
                        std::to_string(st->pos) + " bytes hashing to sha256:" + got + "); upload to " + host +
                        " stopped",
                    "the blob changed or is corrupt; rebuild or pull the image again");
      }
    }
    return n;
  };
}

} // namespace

bool Registry::upload_once(const std::string& repo, const oci::Descriptor& d, const BlobOpener& open,
                           const Progress& progress, UploadFailure& failure) {
  const std::string scope = push_scope(repo);
  Response start = send(
      [&] {
        Request q;
        q.method = "POST";
        q.url = repo_url(repo) + "/blobs/uploads/";
        return q;
      },
      scope, "starting the upload of " + d.digest.str() + " to " + repo, {202});
  std::string loc = absolute(start.headers.get("location"));
  std::string min_hdr = start.headers.get("oci-chunk-min-length");
  if (!min_hdr.empty()) {
    m_chunk_min = std::max<std::int64_t>(m_chunk_min, std::atoll(min_hdr.c_str()));
  }
  auto perform = [&](Request& q) -> Response {
    std::string auth = auth_header(scope, false);
    if (!auth.empty()) {
      q.headers.push_back(auth);
    }
    return m_http->perform(q, tls());
  };
  auto note_status = [&](const Response& r) {
    failure.response = r;
    if (r.status == 401) {
      if (m_opt.log) {
        m_opt.log(1, m_host + " refused the token for " + scope + " (401); getting a new one");
      }
      std::lock_guard<std::mutex> g(m_mutex);
      m_tokens.erase(scope);
    }
  };
  if (!m_chunked && m_opt.chunk_size == 0) {
    Request q;
    q.method = "PUT";
    q.url = with_query(loc, "digest=" + url_escape(d.digest.str()));
    q.headers.push_back("Content-Type: application/octet-stream");
    q.reader = verifying(open(0), d, 0, -1, m_stats, progress, m_host);
    q.body_size = d.size;
    Response r;
    try {
      r = perform(q);
    } catch (const TransportFailure& f) {
      if (!f.retryable) {
        fail_transport(f, "uploading " + d.digest.str());
      }
      failure.message = f.what();
      failure.curl_code = f.curl_code;
      return false;
    }
    if (r.status == 201) {
      return true;
    }
    if (r.status == 413) {
      // A proxy or the registry refuses big bodies: chunks from now on.
      m_chunked = true;
      std::string mh = r.headers.get("oci-chunk-min-length");
      if (!mh.empty()) {
        m_chunk_min = std::max<std::int64_t>(m_chunk_min, std::atoll(mh.c_str()));
      }
      if (m_opt.log) {
        m_opt.log(1, m_host + " refused a " + std::to_string(d.size) + "-byte body (413); uploading in chunks");
      }
      return upload_once(repo, d, open, progress, failure);
    }
    note_status(r);
    if (retryable_status(r.status) || r.status == 401 || r.status == 404) {
      failure.message = "HTTP " + std::to_string(r.status) + " " + error_summary(r);
      return false;
    }
    fail_status(r, "uploading " + d.digest.str() + " to " + repo, scope);
  }
  // Chunked: PATCH with Content-Range, the registry acknowledges with Range.
  std::int64_t chunk = m_opt.chunk_size > 0 ? m_opt.chunk_size : 8 << 20;
  chunk = std::max<std::int64_t>(chunk, m_chunk_min);
  std::int64_t offset = 0;
  int faults = 0;
  // After a failed PATCH: ask the registry how much it holds.
  auto resync = [&]() -> bool {
    Request q;
    q.url = loc;
    try {
      Response r = perform(q);
      if (r.status == 204 || r.status == 202) {
        std::int64_t have = range_end(r.headers.get("range"));
        offset = have < 0 ? 0 : have;
        std::string nl = r.headers.get("location");
        if (!nl.empty()) {
          loc = absolute(nl);
        }
        if (m_opt.log) {
          m_opt.log(1, "resuming the upload of " + d.digest.str() + " after byte " + std::to_string(offset) +
                           " acknowledged by " + m_host);
        }
        return true;
      }
      note_status(r);
      failure.message = "upload session lost (HTTP " + std::to_string(r.status) + ")";
    } catch (const TransportFailure& f) {
      failure.message = f.what();
      failure.curl_code = f.curl_code;
    }
    return false;
  };
  while (offset < d.size) {
    std::int64_t len = std::min(chunk, d.size - offset);
    Request q;
    q.method = "PATCH";
    q.url = loc;
    q.headers.push_back("Content-Type: application/octet-stream");
    q.headers.push_back("Content-Range: " + std::to_string(offset) + "-" + std::to_string(offset + len - 1));
    q.reader = verifying(open(offset), d, offset, len, m_stats, progress, m_host);
    q.body_size = len;
    Response r;
    bool ok = false;
    try {
      r = perform(q);
      ok = true;
    } catch (const TransportFailure& f) {
      if (!f.retryable) {
        fail_transport(f, "uploading " + d.digest.str());
      }
      failure.message = f.what();
      failure.curl_code = f.curl_code;
    }
    if (ok && r.status == 202) {
      std::string nl = r.headers.get("location");
      if (!nl.empty()) {
        loc = absolute(nl);
      }
      std::int64_t have = range_end(r.headers.get("range"));
      offset = have > 0 ? have : offset + len;
      continue;
    }
    if (ok && r.status == 413 && len > (1 << 20) && len > m_chunk_min) {
      chunk = std::max<std::int64_t>({len / 4, std::int64_t{1} << 20, m_chunk_min.load()});
      if (m_opt.log) {
        m_opt.log(1, m_host + " refused a " + std::to_string(len) + "-byte chunk; trying " + std::to_string(chunk));
      }
      continue;
    }
    if (ok) {
      note_status(r);
      if (!retryable_status(r.status) && r.status != 401 && r.status != 416 && r.status != 404) {
        fail_status(r, "uploading " + d.digest.str() + " to " + repo, scope);
      }
      failure.message = "HTTP " + std::to_string(r.status) + " " + error_summary(r);
    }
    if (++faults >= m_opt.max_attempts) {
      return false;
    }
    backoff(faults, ok ? &r : nullptr, "uploading " + d.digest.str() + ": " + failure.message);
    if (!resync()) {
      return false; // the session is gone: start a new one
    }
  }
  Request fin;
  fin.method = "PUT";
  fin.url = with_query(loc, "digest=" + url_escape(d.digest.str()));
  fin.headers.push_back("Content-Type: application/octet-stream");
  fin.body_size = 0;
  try {
    Response r = perform(fin);
    if (r.status == 201) {
      return true;
    }
    note_status(r);
    if (!retryable_status(r.status) && r.status != 401 && r.status != 404) {
      fail_status(r, "completing the upload of " + d.digest.str(), scope);
    }
    failure.message = "HTTP " + std::to_string(r.status);
  } catch (const TransportFailure& f) {
    failure.message = f.what();
    failure.curl_code = f.curl_code;
  }
  return false;
}

void Registry::upload_blob(const std::string& repo, const oci::Descriptor& d, const BlobOpener& open,
                           const Progress& progress) {
  ping();
  for (int attempt = 1;; ++attempt) {
    UploadFailure failure;
    if (upload_once(repo, d, open, progress, failure)) {
      ++m_stats.blobs_uploaded;
      return;
    }
    if (attempt >= m_opt.max_attempts) {
      std::string where = "uploading " + d.digest.str() + " to " + m_host + "/" + repo;
      std::string tries = attempt == 1 ? "1 attempt" : std::to_string(attempt) + " attempts";
      if (failure.curl_code == 28) {
        throw Error(ErrorKind::network, where + ": timed out or stalled after " + tries + " (" + failure.message + ")",
                    "check the network; --timeout sets how long a stalled transfer may wait");
      }
      throw Error(failure.response ? ErrorKind::registry : ErrorKind::network,
                  where + " failed after " + tries + ": " + failure.message,
                  "check the network and the registry; --retries sets how often to try");
    }
    backoff(attempt, failure.response ? &*failure.response : nullptr,
            "uploading " + d.digest.str() + " again with a new session: " + failure.message);
  }
}

std::optional<oci::Descriptor> Registry::head_manifest(const std::string& repo, const std::string& reference) {
  Response r = send(
      [&] {
        Request q;
        q.method = "HEAD";
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back(manifest_accept());
        return q;
      },
      pull_scope(repo), "checking manifest " + repo + ":" + reference, {200, 404});
  if (r.status == 404) {
    return std::nullopt;
  }
  oci::Descriptor d;
  d.media_type = r.headers.get("content-type");
  std::string dig = r.headers.get("docker-content-digest");
  if (dig.empty()) {
    return std::nullopt; // cannot tell without the bytes
  }
  d.digest = oci::Digest::parse(dig);
  std::string len = r.headers.get("content-length");
  d.size = len.empty() ? 0 : std::stoll(len);
  return d;
}

ManifestData Registry::get_manifest(const std::string& repo, const std::string& reference) {
  std::string what =
      "reading manifest " + m_host + "/" + repo + (reference.find(':') != std::string::npos ? "@" : ":") + reference;
  Response r = send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back(manifest_accept());
        q.max_body = 4u << 20;
        return q;
      },
      pull_scope(repo), what, {200, 404}, true);
  if (r.status == 404) {
    throw Error(ErrorKind::registry, what + ": not found (" + error_summary(r) + ")",
                "check the repository and tag; `paddle-image tags " + m_host + "/" + repo + "` lists the tags there");
  }
  if (r.status != 200) {
    fail_status(r, what, pull_scope(repo));
  }
  ManifestData m;
  m.bytes = r.body;
  std::string got = util::sha256_hex(m.bytes);
  if (reference.rfind("sha256:", 0) == 0 && reference.substr(7) != got) {
    throw Error(ErrorKind::integrity, what + ": the registry served bytes hashing to sha256:" + got,
                "the registry or a proxy corrupted the manifest");
  }
  std::string hdr = r.headers.get("docker-content-digest");
  if (!hdr.empty() && hdr.rfind("sha256:", 0) == 0 && hdr.substr(7) != got) {
    throw Error(ErrorKind::integrity,
                what + ": Docker-Content-Digest says " + hdr + " but the bytes hash to sha256:" + got,
                "the registry or a proxy corrupted the manifest");
  }
  m.digest = oci::Digest::sha256(got);
  m.media_type = oci::sniff_media_type(m.bytes);
  std::string ct = r.headers.get("content-type");
  if (!ct.empty() && ct.find("json") != std::string::npos && ct != "application/json") {
    m.media_type = ct.substr(0, ct.find(';'));
  }
  return m;
}

void Registry::put_manifest(const std::string& repo, const std::string& reference, const ManifestData& m) {
  send(
      [&] {
        Request q;
        q.method = "PUT";
        q.url = repo_url(repo) + "/manifests/" + reference;
        q.headers.push_back("Content-Type: " + m.media_type);
        q.body = m.bytes;
        return q;
      },
      push_scope(repo), "putting manifest " + m.digest.str() + " as " + repo + ":" + reference, {201, 200});
  ++m_stats.manifests_put;
}

std::vector<std::string> Registry::list_tags(const std::string& repo) {
  std::vector<std::string> out;
  ping();
  std::string url = repo_url(repo) + "/tags/list?n=1000";
  for (int page = 0; page < 10000 && !url.empty(); ++page) {
    Response r = send(
        [&] {
          Request q;
          q.url = url;
          return q;
        },
        pull_scope(repo), "listing tags of " + repo, {200});
    try {
      auto j = nlohmann::json::parse(r.body);
      if (j.contains("tags") && j["tags"].is_array()) {
        for (const auto& t : j["tags"]) {
          out.push_back(t.get<std::string>());
        }
      }
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::registry, m_host + ": the tag list of " + repo + " is not valid JSON");
    }
    std::string link = r.headers.get("link");
    url.clear();
    auto lt = link.find('<');
    auto gt = link.find('>');
    if (lt != std::string::npos && gt != std::string::npos && link.find("rel=\"next\"") != std::string::npos) {
      url = absolute(link.substr(lt + 1, gt - lt - 1));
    }
  }
  return out;
}

oci::Index Registry::referrers(const std::string& repo, const oci::Digest& d, bool* used_fallback) {
  Response r = send(
      [&] {
        Request q;
        q.url = repo_url(repo) + "/referrers/" + d.str();
        q.headers.push_back(std::string("Accept: ") + oci::media::k_index);
        return q;
      },
      pull_scope(repo), "listing referrers of " + d.str(), {200, 404}, true);
  if (r.status == 200 && r.headers.get("content-type").find(oci::media::k_index) != std::string::npos) {
    if (used_fallback) {
      *used_fallback = false;
    }
    return oci::index_from_json(oci::parse_json(r.body, "referrers of " + d.str()));
  }
  if (used_fallback) {
    *used_fallback = true;
  }
  std::string tag = d.algorithm + "-" + d.hex;
  if (!head_manifest(repo, tag)) {
    return oci::Index{};
  }
  ManifestData m = get_manifest(repo, tag);
  return oci::index_from_json(oci::parse_json(m.bytes, "referrers tag " + tag));
}

} // namespace registry
