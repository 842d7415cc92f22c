#pragma once
// The registry's authenticated session, for one host: the ping that chooses the scheme
// (https, or http for --insecure and loopback hosts) and reads the auth challenge;
// credentials and bearer tokens (fetched per scope from the challenge's realm, cached
// until they expire, refreshed after a 401). Every request it makes (the ping, the
// token fetch, the protocol's requests, the upload session's) goes through the
// retrying transport below it (registry/retry.hpp), which knows nothing of auth. The
// protocol (registry/client.hpp) and uploads (registry/upload.hpp) sit on top.
#include "registry/auth.hpp"
#include "registry/http.hpp"
#include "registry/retry.hpp"

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

// Token scopes.
std::string pull_scope(const std::string& repo);
std::string push_scope(const std::string& repo);

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

  // The retrying transport every request of this session goes through.
  Retrying& transport() { return m_transport; }
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
  // One request through the transport; a transport failure becomes the registry's
  // network error naming `what`.
  std::optional<Response> call(const Call& c, const std::string& what);
  // The Authorization header for scope ("" when none is needed); takes m_mutex.
  std::string auth_header(const std::string& scope);
  // Runs with m_mutex held (one token fetch at a time).
  std::string fetch_token(const std::string& scope);

  std::string m_host;
  std::string m_endpoint; // where the API lives: Docker Hub's is registry-1.docker.io
  ClientOptions m_opt;
  Retrying m_transport;
  Credential m_cred;
  Stats& m_stats;
  std::mutex m_mutex; // guards everything below
  bool m_pinged = false;
  std::string m_scheme = "https";
  std::optional<Challenge> m_challenge;
  std::map<std::string, Token> m_tokens;
};

} // namespace registry
