#pragma once
// The transport layer of the registry client, for one host: the ping that chooses the
// scheme (https, or http for --insecure hosts) and reads the auth challenge;
// credentials and bearer tokens (fetched per scope from the challenge's realm, cached
// until they expire, refreshed after a 401); and the one retry loop (exponential
// backoff with jitter, Retry-After, stalls reported by the transport) through which
// every request goes: the ping, the token fetch, the protocol's requests and the
// upload session's. The protocol (registry/client.hpp) and uploads
// (registry/upload.hpp) sit on top.
#include "registry/auth.hpp"
#include "registry/http.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace registry {

struct ClientOptions {
  std::set<std::string> insecure; // hosts allowed plain HTTP or unverified TLS (--insecure)
  std::string ca_file;            // extra CA (--ca-file)
  int max_attempts = 6;           // per request, counting the first
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
  long stall_timeout_s = 30;
  long connect_timeout_s = 15;
  std::int64_t chunk_size = 0; // 0: one streaming PUT unless the registry demands chunks
  Logger log;
};

// Counters for the metadata JSON; shared by all registries of one command.
struct Stats {
  std::atomic<std::int64_t> bytes_uploaded{0}, bytes_mounted{0}, bytes_skipped{0}, bytes_downloaded{0};
  std::atomic<std::int64_t> blobs_uploaded{0}, blobs_mounted{0}, blobs_skipped{0}, blobs_downloaded{0};
  std::atomic<std::int64_t> retries{0}, manifests_put{0};
};

// Token scopes.
std::string pull_scope(const std::string& repo);
std::string push_scope(const std::string& repo);

// How one attempt in the retry loop ended.
struct Attempt {
  enum class Verdict {
    finish,  // done (a success, or an answer the caller handles)
    retry,   // back off and try again while attempts remain
    again,   // try again at once, not counted (after a token refresh)
    abandon, // stop without an answer (ping: try the next scheme)
  };
  Verdict verdict = Verdict::finish;
  std::string why;                  // for the log line of a retry
  std::optional<Response> response; // the refusal, whose Retry-After sets the delay

  static Attempt finish() { return {}; }
  static Attempt retry(std::string why, std::optional<Response> response = std::nullopt) {
    return {Verdict::retry, std::move(why), std::move(response)};
  }
  static Attempt again() { return {Verdict::again, {}, std::nullopt}; }
  static Attempt abandon() { return {Verdict::abandon, {}, std::nullopt}; }
};

// One request through the retry loop (Session::call), with hooks for what differs
// between its callers (ping, token fetch, the protocol's requests).
struct Call {
  std::string what; // names the request in errors: "downloading sha256:... from team/app"
  TlsPolicy tls;
  std::function<Request()> make; // builds each attempt's request
  std::string log_prefix;        // before the reason in a retry's log line
  // The reason a retryable status gives in the log; "HTTP <status>" when unset.
  std::function<std::string(const Response&)> status_reason;
  // A transport failure the caller handles itself (ping: TLS failed, try plain
  // HTTP): true stops the call, which then returns no response.
  std::function<bool(const TransportFailure&)> fall_back;
  // Judges a response before the default (408, 429 and 5xx retried, anything else
  // final): a verdict, or nullopt for the default.
  std::function<std::optional<Attempt::Verdict>(const Response&)> judge;
};

class Session {
public:
  Session(std::string host, std::shared_ptr<Transport> http, ClientOptions options, Credential credential,
          Stats& stats);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& host() const { return m_host; }
  const ClientOptions& options() const { return m_opt; }
  Stats& stats() { return m_stats; }
  // Logs through ClientOptions::log when there is one.
  void log(int level, const std::string& line) const;

  // GET /v2/ once: reachability, scheme, the auth challenge, the API version header.
  void ping();
  // An authenticated GET /v2/ (for `login`).
  void verify_login();
  // "scheme://endpoint" (Docker Hub's API lives at registry-1.docker.io).
  std::string base_url() const;
  // A Location header made absolute.
  std::string absolute(const std::string& location) const;
  TlsPolicy tls() const;

  // The one retry loop: runs attempt(n) for n = 1, 2, ... until it finishes; a
  // `retry` backs off (exponential, jitter, Retry-After) while attempts remain.
  // False when the attempts ran out or the attempt abandoned.
  bool retry(const std::function<Attempt(int attempt)>& attempt);
  // One request through the loop: transport failures that can pass are retried
  // (others throw, as does running out of attempts on them); the final response is
  // returned. nullopt only when Call::fall_back stopped it.
  std::optional<Response> call(const Call& c);
  // A registry request with auth for scope: a 401 gets a fresh token once; statuses
  // in `accept` are success, others throw a RegistryError (or are returned when
  // `raw`).
  Response send(const std::function<Request()>& make, const std::string& scope, const std::string& what,
                std::initializer_list<long> accept, bool raw = false);
  // One request with auth for scope and no retry (for an upload session, which
  // retries by resuming).
  Response perform_once(Request q, const std::string& scope);
  // Drops the cached token for scope (refused with a 401).
  void forget_token(const std::string& scope);

  // A refusal as a RegistryError with the message and hint its kind calls for.
  [[noreturn]] void fail_status(const Response& r, const std::string& what, const std::string& scope) const;
  [[noreturn]] void fail_transport(const TransportFailure& f, const std::string& what) const;

private:
  struct Token {
    std::string value;
    double expires_at = 0; // steady seconds
  };
  void backoff(int attempt, const Response* r, const std::string& why);
  // The Authorization header for scope ("" when none is needed); takes m_mutex.
  std::string auth_header(const std::string& scope);
  // Runs with m_mutex held (one token fetch at a time).
  std::string fetch_token(const std::string& scope);

  std::string m_host;
  std::string m_endpoint; // where the API lives: Docker Hub's is registry-1.docker.io
  std::shared_ptr<Transport> m_http;
  ClientOptions m_opt;
  Credential m_cred;
  Stats& m_stats;
  std::mutex m_mutex; // guards everything below
  bool m_pinged = false;
  std::string m_scheme = "https";
  std::optional<Challenge> m_challenge;
  std::map<std::string, Token> m_tokens;
};

} // namespace registry
