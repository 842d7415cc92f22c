#pragma once
// A small HTTP layer over libcurl for the registry client: pooled easy handles that
// share connections, DNS and TLS sessions (connection reuse, HTTP/2 over TLS where the
// server offers it), streaming request and response bodies, TLS options per host, and
// a debug log that never shows credentials (Authorization headers are redacted and no
// body is ever logged).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace registry {

// Log sink: level 1 = info (retries, fallbacks), 2 = debug (requests), 3 = trace
// (curl's connection and header traffic, redacted).
using Logger = std::function<void(int level, const std::string& line)>;

struct Headers {
  std::vector<std::pair<std::string, std::string>> items; // names lower-cased
  // First value of a header (case-insensitive name), empty when absent.
  std::string get(const std::string& name) const;
};

struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers; // "Name: value"
  // Request body: a string, or a reader that fills buf and returns the byte count
  // (0 at the end) with body_size known in advance (-1: unknown, sent chunked).
  std::string body;
  std::function<std::size_t(char* buf, std::size_t len)> reader;
  std::int64_t body_size = -1;
  // Response body: streamed to sink (return false to abort) or, without a sink,
  // kept in Response::body up to max_body bytes.
  std::function<bool(const char* data, std::size_t len)> sink;
  // Without a sink, an answer larger than this fails (util::Error, kind registry): a
  // body without end never grows paddle-image's memory, nor is it cut and parsed.
  std::size_t max_body = 8u << 20;
  // Called with the status before the first body byte of a 2xx response reaches sink.
  std::function<void(long status)> on_body_start;
  bool follow_redirects = true;
  long connect_timeout_s = 0; // 0: HttpOptions::connect_timeout_s (covers the TLS handshake)
  // Sent while stopping on a signal (cancelling an upload session): a signal does not
  // abort it, and it may take 5 s at most.
  bool cleanup = false;
};

struct Response {
  long status = 0;
  Headers headers;
  std::string body;
  std::string http_version;  // "1.1", "2"
  std::string effective_url; // where the answer came from, after redirects ("" unknown)
};

struct TlsPolicy {
  bool verify = true;  // false only for --insecure registries
  std::string ca_file; // extra CA bundle (added to the system store)
};

// The system's trusted CAs, as found on this host. A self-contained build of
// paddle-image runs on distributions that keep the bundle elsewhere than the Debian
// libcurl it carries expects, so the bundle is looked for the way OpenSSL and Go do:
// SSL_CERT_FILE and SSL_CERT_DIR, each replacing its own default, which is the first
// of the usual bundles that exists: Debian/Ubuntu /etc/ssl/certs/ca-certificates.crt, Fedora/RHEL
// /etc/pki/tls/certs/ca-bundle.crt and /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem,
// SUSE /etc/ssl/ca-bundle.pem, Alpine /etc/ssl/cert.pem; and /etc/ssl/certs as a hashed
// directory when it holds any.
struct SystemTrust {
  std::string file;   // PEM bundle ("" none)
  std::string dir;    // hashed directory ("" none)
  std::string source; // how it was found, for logs and messages
};
// `env_file`/`env_dir`: the values of SSL_CERT_FILE/SSL_CERT_DIR ("" unset; cli reads
// the environment). `root` prefixes every probed path (tests).
SystemTrust find_system_trust(const std::string& env_file, const std::string& env_dir, const std::string& root = "");

struct HttpOptions {
  long connect_timeout_s = 15;
  long stall_timeout_s = 30; // abort when no byte moves for this long
  // A request whose answer is a document (no sink, no streamed body: manifests, token
  // answers, index pages) must finish within this many seconds, however it trickles.
  long document_deadline_s = 60;
  // A streamed transfer (blobs, wheels, uploads) must move at least min_rate_bps bytes
  // a second on average over each rate_window_s seconds, so a dripping peer fails while
  // a slow but steady link still completes a 10 GB blob.
  long min_rate_bps = 1024;
  long rate_window_s = 30;
  // --timeout S: stalls after S seconds, documents within 2*S, rates over S.
  void set_timeout(long s) {
    stall_timeout_s = s;
    document_deadline_s = 2 * s;
    rate_window_s = s;
  }
  Logger log;
  // Probed without the environment when not given.
  std::optional<SystemTrust> trust;
};

// Thrown when the transfer itself failed (no HTTP status): connection refused or
// cut, DNS, TLS, stall. `retryable` tells whether trying again can help.
struct TransportFailure : std::runtime_error {
  explicit TransportFailure(const std::string& message, int code = 0, bool can_retry = false, bool is_tls = false)
      : std::runtime_error(message), curl_code(code), retryable(can_retry), tls(is_tls) {}
  int curl_code = 0; // libcurl's code (6 unknown host, 28 timeout or stall, 7 refused, ...)
  bool retryable = false;
  bool tls = false;
};

// The seam between the registry protocol and the network: one request, one response.
// Http is the real one; unit tests script a fake to drive retries, token refresh,
// chunked uploads and resumes without a server.
class Transport {
public:
  virtual ~Transport() = default;
  // Performs one request; throws TransportFailure (never util::Error) on transport
  // errors so the caller decides about retries.
  virtual Response perform(const Request& req, const TlsPolicy& tls) = 0;
};

class Http final : public Transport {
public:
  explicit Http(HttpOptions options);
  ~Http();
  Http(const Http&) = delete;
  Http& operator=(const Http&) = delete;
  Response perform(const Request& req, const TlsPolicy& tls) override;

private:
  void* take_handle();
  void give_handle(void* h);
  // The system bundle and an extra --ca-file as one PEM blob (curl takes one CA file),
  // made once per extra file.
  const std::string& trust_blob(const std::string& extra_ca_file);
  HttpOptions m_options;
  SystemTrust m_trust; // m_options.trust, or probed
  std::mutex m_blob_mutex;
  std::map<std::string, std::string> m_blobs;
  void* m_share = nullptr;
  std::mutex m_pool_mutex;
  std::vector<void*> m_pool;
  std::mutex m_share_mutex[8];
};

// The version of libcurl linked in, as it reports itself at run time ("7.88.1").
std::string curl_version();

} // namespace registry
