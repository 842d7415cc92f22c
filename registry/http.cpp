#include "registry/http.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio> // SEEK_SET
#include <cstring>
#include <curl/curl.h>
#include <exception>
#include <filesystem>
#include <string_view>

namespace registry {

namespace {

struct Transfer {
  const Request* req = nullptr;
  Response* resp = nullptr;
  std::size_t body_offset = 0; // for string bodies
  std::exception_ptr error;
  bool body_started = false;
  bool stalled = false;
  bool too_slow = false;    // a streamed transfer below the minimum rate
  bool too_long = false;    // a document past its deadline
  bool interrupted = false; // a signal arrived (util/interrupt.hpp)
  long stall_timeout_s = 30;
  long deadline_s = 0;   // documents: the whole request's limit (0: none)
  long min_rate_bps = 0; // streamed: the least average rate over each window
  long rate_window_s = 30;
  curl_off_t last_dl = -1, last_ul = -1;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_move = started;
  std::chrono::steady_clock::time_point window_start = started;
  curl_off_t window_bytes = 0; // dlnow + ulnow when the window started
  const Logger* log = nullptr;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t len = size * n;
  try {
    // Error statuses keep their (small) body for the message, whatever the sink.
    if (t->req->sink && t->resp->status >= 200 && t->resp->status < 300) {
      if (!t->body_started) {
        t->body_started = true;
        if (t->req->on_body_start) {
          t->req->on_body_start(t->resp->status);
        }
      }
      if (!t->req->sink(data, len)) {
        return 0;
      }
      return len;
    }
    if (t->resp->body.size() + len > t->req->max_body) {
      // Not cut and parsed as if whole: the answer is refused.
      auto u = util::parse_url(t->req->url);
      throw util::Error(
          util::ErrorKind::registry,
          "the answer from " + (u ? u->authority() : std::string("the server")) + " is larger than " +
              std::to_string(t->req->max_body) + " bytes, the most this request accepts",
          "the server or a proxy on the way sent an oversized or endless body; check the URL and the proxy");
    }
    t->resp->body.append(data, len);
    return len;
  } catch (...) {
    t->error = std::current_exception();
    return 0;
  }
}

std::size_t on_read(char* buf, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t len = size * n;
  try {
    if (t->req->reader) {
      return t->req->reader(buf, len);
    }
    std::size_t left = t->req->body.size() - t->body_offset;
    std::size_t k = std::min(left, len);
    std::memcpy(buf, t->req->body.data() + t->body_offset, k);
    t->body_offset += k;
    return k;
  } catch (...) {
    t->error = std::current_exception();
    return CURL_READFUNC_ABORT;
  }
}

// Rewinds a string body when curl resends it on a fresh connection; a streamed body
// cannot rewind (the caller's own retry reopens it at the right offset).
int on_seek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (t->req->reader || origin != SEEK_SET || offset < 0 || static_cast<std::size_t>(offset) > t->req->body.size()) {
    return CURL_SEEKFUNC_CANTSEEK;
  }
  t->body_offset = static_cast<std::size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// The limits a moving transfer can still break: a document's total deadline, and a
// streamed transfer's least average rate over each window (a drip moves a byte now and
// then, so the stall check never fires).
int over_limits(Transfer* t, curl_off_t moved, std::chrono::steady_clock::time_point now) {
  if (t->deadline_s > 0 && now - t->started > std::chrono::seconds(t->deadline_s)) {
    t->too_long = true;
    return 1;
  }
  if (t->min_rate_bps > 0 && now - t->window_start >= std::chrono::seconds(t->rate_window_s)) {
    if (moved - t->window_bytes < static_cast<curl_off_t>(t->min_rate_bps) * t->rate_window_s) {
      t->too_slow = true;
      return 1;
    }
    t->window_start = now;
    t->window_bytes = moved;
  }
  return 0;
}

// Stall detection: no byte up or down for stall_timeout_s seconds aborts the
// transfer (curl's own low-speed check averages over seconds and reacts late).
int on_progress(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (util::interrupted() != 0 && !t->req->cleanup) {
    t->interrupted = true;
    return 1;
  }
  auto now = std::chrono::steady_clock::now();
  if (over_limits(t, dlnow + ulnow, now) != 0) {
    return 1;
  }
  if (dlnow != t->last_dl || ulnow != t->last_ul) {
    t->last_dl = dlnow;
    t->last_ul = ulnow;
    t->last_move = now;
    return 0;
  }
  if (now - t->last_move > std::chrono::seconds(t->stall_timeout_s)) {
    t->stalled = true;
    return 1;
  }
  return 0;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t len = size * n;
  std::string line(data, len);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after 100-continue or a redirect): start over.
    t->resp->headers.items.clear();
    auto sp = line.find(' ');
    if (sp != std::string::npos) {
      t->resp->status = std::atol(line.c_str() + sp + 1);
    }
    return len;
  }
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    t->resp->headers.items.emplace_back(util::ascii_lower(line.substr(0, colon)),
                                        util::trim_left(util::trim_right(line.substr(colon + 1)), " \t"));
  }
  return len;
}

// curl's verbose output with credentials removed: header lines naming
// Authorization (or a cookie) are redacted; bodies are never logged.
int on_debug(CURL*, curl_infotype type, char* data, std::size_t size, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->log || !*t->log) {
    return 0;
  }
  if (type != CURLINFO_TEXT && type != CURLINFO_HEADER_IN && type != CURLINFO_HEADER_OUT) {
    return 0;
  }
  std::string text(data, size);
  const char* dir = type == CURLINFO_HEADER_OUT ? "> " : type == CURLINFO_HEADER_IN ? "< " : "* ";
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    std::string line = util::trim_left(
        util::trim_right(text.substr(start, end == std::string::npos ? std::string::npos : end - start)), " \t");
    start = end == std::string::npos ? text.size() : end + 1;
    if (line.empty()) {
      continue;
    }
    std::string l = util::ascii_lower(line);
    if (l.rfind("authorization:", 0) == 0 || l.rfind("proxy-authorization:", 0) == 0 || l.rfind("cookie:", 0) == 0 ||
        l.rfind("set-cookie:", 0) == 0) {
      line = line.substr(0, line.find(':') + 1) + " [redacted]";
    }
    // Redirect targets (Location, "Issue another request to this URL") and request
    // lines carry presigned URLs: their signatures and tokens are hidden too, and in
    // a trace every query value is, whatever its parameter's name (a storage backend
    // may call its token anything).
    (*t->log)(3, dir + util::hide_query_values(util::redact_text(line)));
  }
  return 0;
}

struct ShareLocksImpl {
  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<std::mutex*>(user)[static_cast<int>(data) % 8].lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<std::mutex*>(user)[static_cast<int>(data) % 8].unlock();
  }
};

bool retryable_code(CURLcode c) {
  switch (c) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_PARTIAL_FILE:
  case CURLE_GOT_NOTHING:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
  case CURLE_READ_ERROR:
  case CURLE_SEND_FAIL_REWIND: // a reused connection died after the body was handed over
    return true;
  default:
    return false;
  }
}

bool tls_code(CURLcode c) {
  switch (c) {
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
    return true;
  default:
    return false;
  }
}

// The handle's request and connection: the URL, the shared DNS and TLS sessions,
// HTTP(S) only (redirects too), the connect timeout.
void set_connection_options(CURL* c, const Request& req, char* errbuf, void* share, long connect_timeout_s) {
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_SHARE, share);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s > 0 ? req.connect_timeout_s : connect_timeout_s);
}

// The limits the progress callback enforces: the stall timeout always; a document's
// deadline, or a streamed body's least rate (none for a cleanup request).
void set_limits(Transfer& t, const Request& req, const HttpOptions& o) {
  t.stall_timeout_s = o.stall_timeout_s;
  if (!req.cleanup) {
    if (!req.sink && !req.reader) {
      t.deadline_s = o.document_deadline_s;
    } else {
      t.min_rate_bps = o.min_rate_bps;
      t.rate_window_s = std::max(1L, o.rate_window_s);
    }
  }
}

// Progress (stall and rate checks), buffer sizes, the user agent, redirects, and a
// cleanup request's short timeout.
void set_transfer_options(CURL* c, const Request& req, Transfer& t) {
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "paddle-image/0.1");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  if (req.cleanup) {
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
  }
}

// Whether the peer's certificate and host name are checked.
void set_verify(CURL* c, const TlsPolicy& tls) {
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, tls.verify ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, tls.verify ? 2L : 0L);
}

// The trusted CAs: `pem` (the system's bundle and --ca-file as one blob, which `blob`
// points at for the transfer) when there is a --ca-file, else the system's bundle;
// the system's hashed directory in both cases.
void set_trusted_cas(CURL* c, const std::string* pem, const SystemTrust& trust, curl_blob& blob) {
  if (pem) {
    blob.data = const_cast<char*>(pem->data());
    blob.len = pem->size();
    blob.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  } else {
    curl_easy_setopt(c, CURLOPT_CAINFO, trust.file.empty() ? nullptr : trust.file.c_str());
  }
  curl_easy_setopt(c, CURLOPT_CAPATH, trust.dir.empty() ? nullptr : trust.dir.c_str());
}

// The body and header callbacks, and the redacted trace when there is a log.
void set_callbacks(CURL* c, Transfer& t, bool logging) {
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  if (logging) {
    curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
    curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_debug);
    curl_easy_setopt(c, CURLOPT_DEBUGDATA, &t);
  }
}

// The request's headers, with curl's "Expect: 100-continue" switched off.
struct curl_slist* request_headers(const Request& req) {
  struct curl_slist* hdrs = nullptr;
  for (const auto& h : req.headers) {
    hdrs = curl_slist_append(hdrs, h.c_str());
  }
  hdrs = curl_slist_append(hdrs, "Expect:");
  return hdrs;
}

// The method, and for one with a body its reader (a string rewinds, a stream does not)
// and size.
void set_method(CURL* c, const Request& req, Transfer& t) {
  bool has_body =
      req.reader || !req.body.empty() || req.method == "PUT" || req.method == "PATCH" || req.method == "POST";
  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &t);
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(c, CURLOPT_SEEKDATA, &t);
    curl_off_t size = req.reader ? static_cast<curl_off_t>(req.body_size) : static_cast<curl_off_t>(req.body.size());
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, size);
  } else if (req.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
}

// What the finished transfer says about the answer: its status (when one came), the
// URL after redirects and the HTTP version.
void read_response_info(CURL* c, Response& resp) {
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status != 0) {
    resp.status = status;
  }
  char* effective = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK && effective != nullptr) {
    resp.effective_url = effective;
  }
  long ver = 0;
  curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &ver);
  resp.http_version = ver == CURL_HTTP_VERSION_2_0 ? "2" : ver == CURL_HTTP_VERSION_1_0 ? "1.0" : "1.1";
}

// Why a transfer failed, in our words for our own limits (stall, deadline, rate), else
// curl's; a certificate failure adds which CAs were trusted.
std::string failure_message(CURLcode rc, const Transfer& t, const char* errbuf, const SystemTrust& st,
                            const TlsPolicy& tls) {
  std::string message = t.stalled    ? "stalled: no data moved for " + std::to_string(t.stall_timeout_s) + " s"
                        : t.too_long ? "no complete answer within " + std::to_string(t.deadline_s) +
                                           " s (the deadline for a whole answer: a manifest, a tag list, a token or an "
                                           "index page: twice --timeout)"
                        : t.too_slow ? "too slow: fewer than " + std::to_string(t.min_rate_bps) +
                                           " bytes a second over " + std::to_string(t.rate_window_s) + " s (--timeout)"
                        : errbuf[0] ? std::string(errbuf)
                                    : std::string(curl_easy_strerror(rc));
  while (!message.empty() && message.back() == '\n') {
    message.pop_back();
  }
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
    // Which CAs were trusted: on a host whose bundle is elsewhere, this is the answer.
    message += st.file.empty() && st.dir.empty()
                   ? " (no CA bundle was found on this host: set SSL_CERT_FILE to one, or pass --ca-file)"
                   : " (trusted: " + (st.file.empty() ? st.dir : st.file) + ", " + st.source +
                         (tls.ca_file.empty() ? "" : ", and --ca-file " + tls.ca_file) + ")";
  }
  return message;
}

} // namespace

std::string Headers::get(const std::string& name) const {
  std::string n = util::ascii_lower(name);
  for (const auto& [k, v] : items) {
    if (k == n) {
      return v;
    }
  }
  return {};
}

SystemTrust find_system_trust(const std::string& env_file, const std::string& env_dir, const std::string& root) {
  // As OpenSSL's default paths: each variable replaces its own default (the bundle or
  // the directory), even when what it names is missing (the TLS error then says so);
  // the other is still probed.
  SystemTrust t;
  std::error_code ec;
  t.file = env_file;
  if (t.file.empty()) {
    for (const char* bundle : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                               "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/ca-bundle.pem",
                               "/etc/ssl/cert.pem", "/etc/pki/tls/cacert.pem"}) {
      std::string p = root + bundle;
      if (std::filesystem::is_regular_file(p, ec) && std::filesystem::file_size(p, ec) > 0) {
        t.file = p;
        break;
      }
    }
  }
  t.dir = env_dir;
  if (t.dir.empty()) {
    // A hashed directory ("<hash>.0" links, as c_rehash makes) adds what a bundle lacks.
    std::string dir = root + "/etc/ssl/certs";
    if (std::filesystem::is_directory(dir, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string n = e.path().filename().string();
        if (n.size() == 10 && n.compare(8, 2, ".0") == 0) {
          t.dir = dir;
          break;
        }
      }
    }
  }
  std::vector<std::string> how;
  if (!env_file.empty()) {
    how.push_back("SSL_CERT_FILE");
  }
  if (!env_dir.empty()) {
    how.push_back("SSL_CERT_DIR");
  }
  if ((env_file.empty() && !t.file.empty()) || (env_dir.empty() && !t.dir.empty())) {
    how.push_back("probed");
  }
  t.source = how.empty() ? "none found" : util::join(how, ", ");
  return t;
}

const std::string& Http::trust_blob(const std::string& extra_ca_file) {
  std::lock_guard<std::mutex> g(m_blob_mutex);
  auto [it, fresh] = m_blobs.try_emplace(extra_ca_file);
  if (fresh) {
    // A system bundle that cannot be read leaves its part empty (the handshake then
    // names the failure); --ca-file must be read.
    std::error_code ec;
    if (!m_trust.file.empty() && std::filesystem::is_regular_file(m_trust.file, ec)) {
      try {
        it->second += util::read_file(m_trust.file) + "\n";
      } catch (const util::Error&) {
      }
    }
    try {
      it->second += util::read_file(extra_ca_file) + "\n";
    } catch (const util::Error& e) {
      m_blobs.erase(it);
      throw TransportFailure("cannot read --ca-file " + extra_ca_file + " (" + e.what() + ")", 0, false, true);
    }
  }
  return it->second;
}

Http::Http(HttpOptions options)
    : m_options(std::move(options)), m_trust(m_options.trust ? *m_options.trust : find_system_trust("", "")) {
  if (m_options.log) {
    m_options.log(3, "trusted CAs: " + (m_trust.file.empty() ? "no bundle" : m_trust.file) +
                         (m_trust.dir.empty() ? "" : ", directory " + m_trust.dir) + " (" + m_trust.source + ")");
  }
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  CURLSH* sh = curl_share_init();
  curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, ShareLocksImpl::lock);
  curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, ShareLocksImpl::unlock);
  curl_share_setopt(sh, CURLSHOPT_USERDATA, static_cast<void*>(m_share_mutex));
  curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  m_share = sh;
}

Http::~Http() {
  for (void* h : m_pool) {
    curl_easy_cleanup(static_cast<CURL*>(h));
  }
  curl_share_cleanup(static_cast<CURLSH*>(m_share));
}

void* Http::take_handle() {
  {
    std::lock_guard<std::mutex> g(m_pool_mutex);
    if (!m_pool.empty()) {
      void* h = m_pool.back();
      m_pool.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void Http::give_handle(void* h) {
  std::lock_guard<std::mutex> g(m_pool_mutex);
  m_pool.push_back(h);
}

Response Http::perform(const Request& req, const TlsPolicy& tls) {
  CURL* c = static_cast<CURL*>(take_handle());
  struct Give {
    Http* self;
    CURL* c;
    ~Give() { self->give_handle(c); }
  } give{this, c};
  // Reset drops the options but keeps the handle's live connections for reuse.
  curl_easy_reset(c);
  Response resp;
  Transfer t;
  t.req = &req;
  t.resp = &resp;
  t.log = &m_options.log;
  char errbuf[CURL_ERROR_SIZE] = {0};
  set_connection_options(c, req, errbuf, m_share, m_options.connect_timeout_s);
  set_limits(t, req, m_options);
  set_transfer_options(c, req, t);
  set_verify(c, tls);
  // The system's CAs as found on this host (not the paths compiled into libcurl), plus
  // --ca-file: curl reads one file, so both go in as one blob.
  curl_blob blob{};
  const std::string* pem = tls.ca_file.empty() ? nullptr : &trust_blob(tls.ca_file);
  set_trusted_cas(c, pem, m_trust, blob);
  set_callbacks(c, t, static_cast<bool>(m_options.log));
  struct curl_slist* hdrs = request_headers(req);
  set_method(c, req, t);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(hdrs);
  if (t.error) {
    std::rethrow_exception(t.error);
  }
  if (t.interrupted) {
    util::throw_interrupted();
  }
  read_response_info(c, resp);
  if (rc != CURLE_OK) {
    if (t.stalled || t.too_slow || t.too_long) {
      rc = CURLE_OPERATION_TIMEDOUT;
    }
    throw TransportFailure(failure_message(rc, t, errbuf, m_trust, tls), static_cast<int>(rc), retryable_code(rc),
                           tls_code(rc));
  }
  return resp;
}

std::string curl_version() {
  return curl_version_info(CURLVERSION_NOW)->version;
}

} // namespace registry
