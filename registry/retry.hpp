#pragma once
// The retrying HTTP transport: one loop (exponential backoff with jitter, Retry-After,
// stalls reported by the transport) through which every request of the registry
// client and of the package index client goes. It knows nothing of authentication:
// the registry's token session (registry/session.hpp) and the index client's Basic and
// netrc credentials (python/index.hpp) sit on top of it, as go-containerregistry keeps
// transport/retry.go apart from bearer.go.
#include "registry/http.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace registry {

// The options of a client over the transport (the registry's, the index's), set from
// the command's flags.
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

// What became of one blob a push sent: "uploaded", "mounted" or "already there".
struct BlobOutcome {
  std::string registry, repository, digest;
  std::int64_t size = 0;
  std::string how;
};

// Counters for the metadata JSON; shared by all registries of one command.
struct Stats {
  std::atomic<std::int64_t> bytes_uploaded{0}, bytes_mounted{0}, bytes_skipped{0}, bytes_downloaded{0};
  std::atomic<std::int64_t> blobs_uploaded{0}, blobs_mounted{0}, blobs_skipped{0}, blobs_downloaded{0};
  std::atomic<std::int64_t> retries{0}, manifests_put{0};

  void record(BlobOutcome o) {
    std::lock_guard<std::mutex> g(m_mutex);
    m_outcomes.push_back(std::move(o));
  }
  // In the order the pushes settled them.
  std::vector<BlobOutcome> outcomes() const {
    std::lock_guard<std::mutex> g(m_mutex);
    return m_outcomes;
  }

private:
  mutable std::mutex m_mutex;
  std::vector<BlobOutcome> m_outcomes;
};

struct RetryOptions {
  int max_attempts = 6; // per request, counting the first
  double backoff_initial_s = 0.5;
  double backoff_max_s = 30;
  Logger log;
};
RetryOptions retry_options(const ClientOptions& options);

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

// One request through the retry loop (Retrying::call), with hooks for what differs
// between its callers (ping, token fetch, the protocol's requests, index pages).
struct Call {
  TlsPolicy tls;
  std::function<Request()> make; // builds each attempt's request (with its credentials)
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

// Whether a status is worth another attempt (408, 429, 5xx but 501 and 505).
bool retryable_status(long status);
// The delay a Retry-After header asks for (seconds or an HTTP-date), -1 without one.
double retry_after_s(const Response& r);

class Retrying {
public:
  // `retries` counts the retries for the command's report (may be null).
  Retrying(std::shared_ptr<Transport> http, RetryOptions options, std::atomic<std::int64_t>* retries = nullptr);

  const RetryOptions& options() const { return m_opt; }
  void log(int level, const std::string& line) const;

  // The loop: runs attempt(n) for n = 1, 2, ... until it finishes; a `retry` backs off
  // (exponential, jitter, Retry-After) while attempts remain. False when the attempts
  // ran out or the attempt abandoned.
  bool retry(const std::function<Attempt(int attempt)>& attempt);
  // One request through the loop: transport failures that can pass are retried; one
  // that cannot, or the last one when the attempts run out, is thrown as the
  // TransportFailure it is (the caller words it for its users). Returns the final
  // response; nullopt only when Call::fall_back stopped it.
  std::optional<Response> call(const Call& c);
  // One request, no retry (an upload session retries by resuming).
  Response perform_once(const Request& q, const TlsPolicy& tls);

private:
  void backoff(int attempt, const Response* r, const std::string& why);

  std::shared_ptr<Transport> m_http;
  RetryOptions m_opt;
  std::atomic<std::int64_t>* m_retries;
};

} // namespace registry
