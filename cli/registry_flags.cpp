#include "cli/registry_flags.hpp"
#include "imageio/source.hpp"

#include "util/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace cli {

namespace {

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string env_or(const char* name, const std::string& fallback = {}) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string short_digest(const std::string& d) {
  return d.substr(0, std::min<std::size_t>(d.size(), 19));
}

std::string bar(std::int64_t done, std::int64_t total, int width) {
  int fill = total > 0 ? static_cast<int>(done * width / total) : width;
  return "[" + std::string(static_cast<std::size_t>(fill), '#') +
         std::string(static_cast<std::size_t>(width - fill), ' ') + "]";
}

} // namespace

void RegistryFlags::add(CLI::App* c, bool transfer, bool select, bool credentials) {
  c->add_flag("--insecure", insecure,
              "Allow plain HTTP or unverified TLS for the registries of this command (local test registries only)");
  c->add_option("--insecure-registry", insecure_hosts, "Allow plain HTTP or unverified TLS for this host only");
  c->add_option("--ca-file", ca_file, "Trust this CA (PEM) in addition to the system's")->check(CLI::ExistingFile);
  if (credentials) {
    c->add_option("-u,--username", username, "Registry user (with --password-stdin)");
    c->add_flag("--password-stdin", password_stdin, "Read the password or token from stdin");
  }
  c->add_option("--retries", retries, "Attempts per request after the first (default 5)")->check(CLI::Range(0, 50));
  c->add_option("--timeout", timeout,
                "Seconds a stalled transfer may wait before it is retried; a manifest, token or index page must arrive "
                "within twice this, a blob move 1 KiB/s over this (default 30)")
      ->check(CLI::Range(1, 3600));
  c->add_option("--log-level", log_level, "error, warn, info, debug or trace (trace shows redacted HTTP headers)")
      ->check(CLI::IsMember({"error", "warn", "info", "debug", "trace"}));
  c->add_flag("-v,--verbose", verbose, "More log output (-v info, -vv debug, -vvv trace)");
  if (transfer) {
    c->add_option("--jobs", jobs, "Blobs transferred in parallel (default 4)")->check(CLI::Range(1, 64));
    c->add_option("--chunk-size", chunk_size, "Upload in chunks of this size (e.g. 16M; default: one stream)");
  }
  if (select) {
    c->add_option("--platform", platform,
                  "Image of an index to use (default linux/amd64); a single-platform image must match it when given");
  }
  if (transfer && select) {
    c->add_flag("--all", all_platforms, "Copy every image of an index");
    c->add_flag("--no-signatures", no_signatures,
                "Leave signatures, attestations and other referrers of the image behind (they go along by default)");
  }
}

registry::SystemTrust system_trust_from_env() {
  return registry::find_system_trust(env_or("SSL_CERT_FILE"), env_or("SSL_CERT_DIR"));
}

registry::AuthFiles auth_files_from_env() {
  registry::AuthFiles f;
  std::string home = env_or("HOME", "/root");
  f.docker_config_dir = env_or("DOCKER_CONFIG", home + "/.docker");
  f.registry_auth_file = env_or("REGISTRY_AUTH_FILE");
  std::string xdg = env_or("XDG_RUNTIME_DIR");
  if (!xdg.empty()) {
    f.podman_auth_file = std::filesystem::path(xdg) / "containers" / "auth.json";
  }
  return f;
}

oci::Platform parse_platform(const std::string& text) {
  if (text.empty()) {
    return oci::default_platform(); // --platform not given
  }
  return oci::parse_platform(text, "--platform");
}

oci::ImagePtr open_image(const oci::ImageRef& ref, RegistrySession& sess, std::vector<std::string>* archive_repo_tags) {
  return imageio::open_source(
      ref, [&sess](const std::string& host) { return sess.connect(host); }, archive_repo_tags);
}

ProgressView::Item& ProgressView::item_for(const std::string& key) {
  auto [it, inserted] = m_items.try_emplace(key);
  if (inserted) {
    m_order.push_back(key);
  }
  return it->second;
}

void ProgressView::update(const oci::Digest& d, std::int64_t done, std::int64_t total) {
  if (m_out.quiet) {
    return;
  }
  std::lock_guard<std::mutex> g(m_mutex);
  std::string key = d.str();
  Item& item = item_for(key);
  item.done = done;
  item.total = total;
  if (m_out.tty) {
    draw(done >= total);
    return;
  }
  // Plain lines: start, each quarter, done.
  int quarter = total > 0 ? static_cast<int>(done * 4 / total) : 4;
  if (quarter != item.reported_quarter) {
    item.reported_quarter = quarter;
    // The percentage of the bytes moved (a line is printed at each quarter, but the
    // figure is the real one: "23% (2.0 MiB / 8.7 MiB)", never "0%" beside 2 MiB).
    int pct = total > 0 ? static_cast<int>(done * 100 / total) : 100;
    std::cerr << "  " << short_digest(key) << " " << pct << "% (" << human_size(done) << " / " << human_size(total)
              << ")" << std::endl;
  }
}

void ProgressView::settle(const oci::Digest& d, std::int64_t size, const std::string& how) {
  if (m_out.quiet) {
    return;
  }
  std::lock_guard<std::mutex> g(m_mutex);
  std::string key = d.str();
  Item& item = item_for(key);
  item.done = size;
  item.total = size;
  item.how = how;
  item.reported_quarter = 4;
  if (m_out.tty) {
    draw(true);
    return;
  }
  std::cerr << "  " << short_digest(key) << " " << how << " (" << human_size(size) << ")" << std::endl;
}

namespace {

// One blob's line: how it settled (mounted, already there), or its bar.
std::string blob_line(const std::string& key, const std::string& how, std::int64_t done, std::int64_t total) {
  if (!how.empty()) {
    return "\033[K  " + short_digest(key) + " " + how + " (" + human_size(total) + ")\n";
  }
  return "\033[K  " + short_digest(key) + " " + bar(done, total, 24) + " " + human_size(done) + " / " +
         human_size(total) + (done >= total ? " done" : "") + "\n";
}

// Clears the lines left over from a taller previous frame and moves back up.
std::string clear_leftover(int lines, int previous) {
  std::string s;
  for (int i = lines; i < previous; ++i) {
    s += "\033[K\n";
  }
  if (previous > lines) {
    s += "\033[" + std::to_string(previous - lines) + "F";
  }
  return s;
}

} // namespace

void ProgressView::draw(bool force) {
  double now = steady_now();
  if (!force && now - m_last_draw < 0.1) {
    return;
  }
  m_last_draw = now;
  std::string s;
  if (m_lines > 0) {
    s += "\033[" + std::to_string(m_lines) + "F";
  }
  std::int64_t done = 0, total = 0;
  int lines = 0;
  int finished = 0;
  // Active blobs first, then finished ones, at most 8 lines.
  std::vector<const std::string*> shown;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& k : m_order) {
      const Item& i = m_items[k];
      bool active = i.done < i.total;
      if (pass == 0) {
        done += i.done;
        total += i.total;
        finished += active ? 0 : 1;
      }
      if (active == (pass == 0) && shown.size() < 8) {
        shown.push_back(&k);
      }
    }
  }
  for (const std::string* k : shown) {
    const Item& i = m_items[*k];
    s += blob_line(*k, i.how, i.done, i.total);
    ++lines;
  }
  s += "\033[K  total " + bar(done, total, 24) + " " + human_size(done) + " / " + human_size(total) + " (" +
       std::to_string(finished) + "/" + std::to_string(m_order.size()) + " blobs)\n";
  ++lines;
  s += clear_leftover(lines, m_lines);
  m_lines = lines;
  std::cerr << s << std::flush;
}

void ProgressView::finish() {
  std::lock_guard<std::mutex> g(m_mutex);
  if (m_out.tty && !m_order.empty()) {
    draw(true);
  }
}

namespace {

// --chunk-size, at least 64K: each chunk is a request, and tiny ones turn a push into
// minutes of round trips.
std::int64_t chunk_size_flag(const std::string& text) {
  std::int64_t size = parse_size(text, "--chunk-size");
  constexpr std::int64_t k_min_chunk = 64 * 1024;
  if (size < k_min_chunk) {
    throw util::Error(util::ErrorKind::usage, "--chunk-size: '" + text + "' is below the minimum of 64K (65536 bytes)",
                      "use 64K or more; 16M suits most registries");
  }
  return size;
}

// --password-stdin: all of stdin, trailing newlines dropped; nothing is a usage error.
std::string password_from_stdin() {
  std::string pw((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  while (!pw.empty() && (pw.back() == '\n' || pw.back() == '\r')) {
    pw.pop_back();
  }
  if (pw.empty()) {
    throw util::Error(util::ErrorKind::usage, "--password-stdin: nothing was read from stdin",
                      "pipe the password in: echo \"$PASSWORD\" | paddle-image ...");
  }
  return pw;
}

} // namespace

RegistrySession::RegistrySession(const RegistryFlags& flags, const Output& out, const std::string& explicit_host)
    : m_flags(flags), m_out(out), m_creds(auth_files_from_env()), m_progress(out) {
  static const std::map<std::string, int> levels = {
      {"error", -1}, {"warn", 0}, {"info", 1}, {"debug", 2}, {"trace", 3}};
  m_level = std::max(levels.at(flags.log_level), flags.verbose);
  m_client.ca_file = flags.ca_file;
  m_client.max_attempts = flags.retries + 1;
  m_client.stall_timeout_s = flags.timeout;
  if (!flags.chunk_size.empty()) {
    m_client.chunk_size = chunk_size_flag(flags.chunk_size);
  }
  for (const auto& h : flags.insecure_hosts) {
    m_client.insecure.insert(h);
  }
  if (m_level >= 1) {
    m_client.log = [this](int level, const std::string& line) { log(level, line); };
  }
  m_http_options.set_timeout(flags.timeout);
  registry::set_credential_helper_timeout(flags.timeout);
  m_http_options.trust = system_trust_from_env();
  if (m_level >= 3) {
    m_http_options.log = m_client.log;
  }
  m_http = std::make_shared<registry::Http>(m_http_options);
  if (!flags.username.empty() || flags.password_stdin) {
    if (flags.username.empty() || !flags.password_stdin) {
      throw util::Error(util::ErrorKind::usage, "--username and --password-stdin go together",
                        "echo \"$TOKEN\" | paddle-image ... --username USER --password-stdin");
    }
    registry::Credential c;
    c.username = flags.username;
    c.password = password_from_stdin();
    c.source = "--username/--password-stdin";
    if (explicit_host.empty()) {
      // The command names its registry only when it opens the image: the credential
      // goes to the first registry it connects to (the image's), and to no other.
      m_pending_explicit = c;
    } else {
      m_creds.set_explicit(explicit_host, c);
    }
  }
}

void RegistrySession::log(int level, const std::string& line) const {
  if (level > m_level) {
    return;
  }
  static std::mutex m;
  std::lock_guard<std::mutex> g(m);
  static const char* names[] = {"warn", "info", "debug", "trace"};
  std::cerr << (m_out.tty ? "\r\033[K" : "") << "paddle-image: [" << names[std::clamp(level, 0, 3)] << "] " << line
            << std::endl;
}

python::IndexAccess RegistrySession::index_access(python::IndexDefaults defaults) const {
  python::IndexAccess a;
  a.defaults = std::move(defaults);
  a.client = m_client;
  a.http = m_http;
  a.insecure_all = m_flags.insecure;
  return a;
}

python::IndexDefaults index_defaults_from_env() {
  python::PipEnvironment env;
  env.home = env_or("HOME");
  env.xdg_config_home = env_or("XDG_CONFIG_HOME");
  env.pip_config_file = env_or("PIP_CONFIG_FILE");
  env.pip_index_url = env_or("PIP_INDEX_URL");
  env.pip_extra_index_url = env_or("PIP_EXTRA_INDEX_URL");
  env.pip_find_links = env_or("PIP_FIND_LINKS");
  env.netrc = env_or("NETRC");
  return python::index_defaults(env);
}

std::shared_ptr<registry::Registry> RegistrySession::connect(const std::string& host) {
  std::lock_guard<std::mutex> g(m_mutex);
  auto it = m_registries.find(host);
  if (it != m_registries.end()) {
    return it->second;
  }
  registry::ClientOptions opt = m_client;
  if (m_flags.insecure) {
    opt.insecure.insert(host);
  }
  if (m_pending_explicit) {
    m_creds.set_explicit(host, *m_pending_explicit);
    m_pending_explicit.reset();
  }
  registry::Credential cred = m_creds.lookup(host);
  if (m_level >= 2) {
    log(2, host + ": credentials " + (cred.anonymous() ? std::string("none (anonymous)") : "from " + cred.source));
  }
  auto reg = std::make_shared<registry::Registry>(host, m_http, opt, cred, m_stats);
  m_registries[host] = reg;
  return reg;
}

std::shared_ptr<registry::Registry> RegistrySession::connect_quick(const std::string& host, long deadline_s) {
  std::lock_guard<std::mutex> g(m_mutex);
  auto it = m_quick_registries.find(host);
  if (it != m_quick_registries.end()) {
    return it->second;
  }
  if (!m_quick_http) {
    registry::HttpOptions ho = m_http_options;
    ho.connect_timeout_s = std::min<long>(ho.connect_timeout_s, 5);
    ho.stall_timeout_s = std::min(ho.stall_timeout_s, deadline_s);
    ho.document_deadline_s = std::min(ho.document_deadline_s, deadline_s);
    ho.rate_window_s = std::min(ho.rate_window_s, deadline_s);
    m_quick_http = std::make_shared<registry::Http>(ho);
  }
  registry::ClientOptions opt = m_client;
  opt.max_attempts = 1;
  opt.stall_timeout_s = std::min(opt.stall_timeout_s, deadline_s);
  if (m_flags.insecure) {
    opt.insecure.insert(host);
  }
  auto reg = std::make_shared<registry::Registry>(host, m_quick_http, opt, m_creds.lookup(host), m_stats);
  m_quick_registries[host] = reg;
  return reg;
}

registry::TransferOptions RegistrySession::transfer_options() {
  registry::TransferOptions t;
  t.jobs = m_flags.jobs;
  t.platform = parse_platform(m_flags.platform);
  t.platform_explicit = !m_flags.platform.empty();
  t.all_platforms = m_flags.all_platforms;
  t.attachments = !m_flags.no_signatures;
  t.progress = [this](const oci::Digest& d, std::int64_t done, std::int64_t total) {
    m_progress.update(d, done, total);
  };
  t.settled = [this](const oci::Digest& d, std::int64_t size, const std::string& how) {
    m_progress.settle(d, size, how);
  };
  t.info = [this](const std::string& line) { m_out.info(line); };
  return t;
}

nlohmann::json RegistrySession::stats_json() const {
  const auto& s = m_stats;
  return {{"blobs", blobs_json()},
          {"bytes_uploaded", s.bytes_uploaded.load()},
          {"bytes_mounted", s.bytes_mounted.load()},
          {"bytes_skipped", s.bytes_skipped.load()},
          {"bytes_downloaded", s.bytes_downloaded.load()},
          {"blobs_uploaded", s.blobs_uploaded.load()},
          {"blobs_mounted", s.blobs_mounted.load()},
          {"blobs_skipped", s.blobs_skipped.load()},
          {"blobs_downloaded", s.blobs_downloaded.load()},
          {"manifests_put", s.manifests_put.load()},
          {"retries", s.retries.load()}};
}

nlohmann::json RegistrySession::blobs_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& o : m_stats.outcomes()) {
    out.push_back({{"registry", o.registry},
                   {"repository", o.repository},
                   {"digest", o.digest},
                   {"size", o.size},
                   {"how", o.how}});
  }
  return out;
}

} // namespace cli
