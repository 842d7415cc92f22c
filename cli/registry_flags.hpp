#pragma once
// What every registry-facing command shares: the flags (TLS, credentials, retries,
// parallelism, logging), the credential files from the environment, one HTTP layer
// and one client per host, progress display and the transfer counters.
#include "cli/output.hpp"
#include "python/pip_conf.hpp"
#include "registry/transfer.hpp"

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cli {

struct RegistryFlags {
  bool insecure = false;                   // every registry of this command
  std::vector<std::string> insecure_hosts; // just these
  std::string ca_file;
  std::string username;
  bool password_stdin = false;
  int jobs = 4;
  int retries = 5;
  long timeout = 30;
  std::string chunk_size;
  std::string platform; // "" = not given: linux/amd64 from an index, any single-platform image
  bool all_platforms = false;
  bool no_signatures = false; // --no-signatures: attachments stay behind
  std::string log_level = "warn";
  int verbose = 0;
  // Adds the flags; `transfer` adds --jobs, --chunk-size, --platform, --all, --no-signatures.
  // `select` adds --platform and --all (commands that read an index).
  // `credentials`: -u/--username and --password-stdin (not for commands whose only
  // remote is a package index, which takes credentials from its URL or netrc).
  void add(CLI::App* c, bool transfer, bool select = true, bool credentials = true);
};

// Draws per-blob and total progress: bars on a terminal, plain lines otherwise.
class ProgressView {
public:
  explicit ProgressView(const Output& out) : m_out(out) {}
  void update(const oci::Digest& d, std::int64_t done, std::int64_t total);
  // A blob that arrived without moving its bytes ("mounted from team/base", "already
  // there"): shown as such, not as a 100% transfer.
  void settle(const oci::Digest& d, std::int64_t size, const std::string& how);
  void finish();

private:
  void draw(bool force);
  const Output& m_out;
  std::mutex m_mutex;
  struct Item {
    std::int64_t done = 0, total = 0;
    int reported_quarter = -1;
    std::string how; // set for a blob that moved no bytes
  };
  // The item of a blob, added in order of first sight; m_mutex held.
  Item& item_for(const std::string& key);
  std::map<std::string, Item> m_items;
  std::vector<std::string> m_order;
  int m_lines = 0;
  double m_last_draw = 0;
};

class RegistrySession {
public:
  // `explicit_host` receives --username/--password-stdin credentials; when it is empty,
  // the first registry the command connects to (the image's) receives them.
  RegistrySession(const RegistryFlags& flags, const Output& out, const std::string& explicit_host = {});
  std::shared_ptr<registry::Registry> connect(const std::string& host);
  // The same host for quick questions that may go unanswered (registry cache lookups):
  // one attempt, a connect timeout of at most 5 s, and a deadline of `deadline_s` for
  // each request (or --timeout's, if shorter). Same credentials and TLS settings.
  std::shared_ptr<registry::Registry> connect_quick(const std::string& host, long deadline_s);
  registry::TransferOptions transfer_options();
  // The counters, and "blobs": what became of each blob pushed ({registry, repository,
  // digest, size, how: uploaded | mounted from REPO | already there}).
  nlohmann::json stats_json() const;
  nlohmann::json blobs_json() const;
  registry::Stats& stats() { return m_stats; }
  void finish() { m_progress.finish(); }
  registry::CredentialStore& credentials() { return m_creds; }
  // The same TLS, retry, log and HTTP settings for package indexes (wheels layers).
  python::IndexAccess index_access(python::IndexDefaults defaults) const;
  void log(int level, const std::string& line) const;

private:
  const RegistryFlags& m_flags;
  const Output& m_out;
  int m_level = 0;
  registry::Stats m_stats;
  registry::ClientOptions m_client;
  registry::CredentialStore m_creds;
  std::optional<registry::Credential> m_pending_explicit;
  registry::HttpOptions m_http_options;
  std::shared_ptr<registry::Http> m_http;
  std::shared_ptr<registry::Http> m_quick_http; // connect_quick's, made on first use
  std::mutex m_mutex;
  std::map<std::string, std::shared_ptr<registry::Registry>> m_registries;
  std::map<std::string, std::shared_ptr<registry::Registry>> m_quick_registries;
  ProgressView m_progress;
};

registry::AuthFiles auth_files_from_env();
// The system CAs: SSL_CERT_FILE / SSL_CERT_DIR, else the usual bundles (registry/http.hpp).
registry::SystemTrust system_trust_from_env();
// PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, pip.conf (PIP_CONFIG_FILE, then
// /etc/xdg/pip/pip.conf, /etc/pip.conf, ~/.pip/pip.conf, $XDG_CONFIG_HOME/pip/pip.conf,
// later files overriding earlier ones, [install] over [global]) and $NETRC or ~/.netrc.
python::IndexDefaults index_defaults_from_env();
oci::Platform parse_platform(const std::string& text);

// Any image reference as an image: a registry repository (through sess), an OCI
// layout, a docker-archive read in place (its RepoTags into *archive_repo_tags).
oci::ImagePtr open_image(const oci::ImageRef& ref, RegistrySession& sess,
                         std::vector<std::string>* archive_repo_tags = nullptr);

} // namespace cli
