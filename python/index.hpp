#pragma once
// A client for Python package indexes, over the registry module's HTTP stack (the
// same libcurl pool, TLS options, proxy handling and retry loop as registry
// requests): PEP 503 HTML project pages, PEP 691 JSON pages (asked for by content
// negotiation, HTML taken when a mirror answers with it), flat find-links pages (how
// Paddle publishes its GPU wheels), PEP 658/714 metadata files, PEP 592 yanking and
// Requires-Python. Downloads stream to a caller's sink and resume with Range after a
// cut. Credentials come from the index URL's userinfo or a netrc file and never
// appear in messages: every URL this client reports is redacted.
#include "registry/http.hpp"
#include "registry/retry.hpp"

#include "util/url.hpp"

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace python {

namespace fs = std::filesystem;

// One distribution file an index or find-links page offers.
struct IndexFile {
  std::string filename;
  std::string url;                            // absolute, without credentials or fragment
  std::string sha256;                         // advertised (lower-case hex); "" when the page gives none
  std::optional<std::string> requires_python; // data-requires-python / "requires-python"
  std::optional<std::string> yanked;          // the reason ("" when none given) when yanked
  std::optional<std::string> metadata_sha256; // PEP 658: offered ("" without a hash)
  std::int64_t size = -1;                     // PEP 700 "size" (JSON pages); -1 unknown
  std::string page;                           // the page it was listed on (redacted)
  // The name the page gives the file (an HTML link's text, PEP 691 "filename") when it
  // is not the URL's last path segment, percent-decoded: such a file is ignored, as a
  // page that names one file and links another cannot be trusted for either.
  std::string listed_as;
};

struct IndexSources {
  std::vector<std::string> indexes;    // simple-API roots, first is the primary
  std::vector<std::string> find_links; // flat pages (or directories of files: file:// or a path)
  fs::path netrc;                      // "" : no netrc
};

// The parsers, public for tests.
// Anchors of an HTML page (PEP 503 project page or a flat find-links page), their
// hrefs made absolute against `page_url` (and <base href> when present).
std::vector<IndexFile> parse_html_page(const std::string& html, const std::string& page_url);
// The "files" of a PEP 691 JSON project page. Throws util::Error(input) on a page
// that is not the JSON simple API.
std::vector<IndexFile> parse_json_page(const std::string& json, const std::string& page_url);
// `ref` resolved against `base` (RFC 3986 for the forms pages use).
std::string resolve_url(const std::string& base, const std::string& ref);
// Redaction is util's one function (util/url.hpp): URLs are shown with their userinfo
// and credential-bearing query parameters as "***", and stored without userinfo.
using util::redact_url;
using util::without_userinfo;
// The project a distribution file belongs to, PEP 503-normalised ("" when the name is
// neither a wheel nor an sdist).
std::string file_project(const std::string& filename);
// A netrc entry for host: {login, password}; the `default` entry when no machine
// matches. nullopt when the file is missing or has neither.
std::optional<std::pair<std::string, std::string>> netrc_lookup(const fs::path& netrc, const std::string& host);

class PackageIndex {
public:
  PackageIndex(IndexSources sources, std::shared_ptr<registry::Transport> http, registry::ClientOptions options,
               registry::Stats& stats);
  ~PackageIndex();
  PackageIndex(const PackageIndex&) = delete;
  PackageIndex& operator=(const PackageIndex&) = delete;

  const IndexSources& sources() const { return m_sources; }
  // Every file of `project` the indexes and find-links pages list, in source order
  // (indexes first, then find-links). A project no index knows (404) is an empty list.
  std::vector<IndexFile> files(const std::string& project);
  // The PEP 658 metadata of a file that offers it; checked against its advertised
  // sha256 (util::Error(integrity) when it differs).
  std::string metadata(const IndexFile& file);
  // Streams a file to write(); after a cut the retry asks for the rest with Range
  // (restart() is called first if the server sends the whole file again). Throws
  // util::Error(network/registry/auth) when the transfer cannot complete.
  void download(const IndexFile& file, const std::function<void(const char*, std::size_t)>& write,
                const std::function<void()>& restart);
  // Requests sent (pages, metadata, files), for the build report.
  std::int64_t requests() const { return m_requests; }

private:
  struct Host;
  Host& host_for(const std::string& url);
  // A GET through the host's retry loop; nullopt on 404/410 when `missing_ok`.
  std::optional<registry::Response> get(const std::string& url, const std::vector<std::string>& headers,
                                        const std::string& what, bool missing_ok);
  std::vector<IndexFile> find_links_files();

  IndexSources m_sources;
  registry::ClientOptions m_options;
  registry::Stats& m_stats;
  registry::Retrying m_transport; // the registry's retry loop, without its token auth
  std::mutex m_mutex;
  std::map<std::string, std::unique_ptr<Host>> m_hosts;
  std::mutex m_find_links_mutex;
  std::optional<std::vector<IndexFile>> m_find_links; // fetched once, under m_find_links_mutex
  std::map<std::string, std::vector<IndexFile>> m_pages;
  std::atomic<std::int64_t> m_requests{0};
};

} // namespace python
