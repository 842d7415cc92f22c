#include "python/index.hpp"

#include "python/metadata.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace python {

using registry::Attempt;
using registry::Call;
using registry::ClientOptions;
using registry::Request;
using registry::Response;
using registry::Retrying;
using registry::Stats;
using registry::Transport;
using registry::TransportFailure;

using util::Error;
using util::ErrorKind;

namespace {

constexpr const char* kAcceptSimple = "Accept: application/vnd.pypi.simple.v1+json, "
                                      "application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";

struct UrlParts {
  std::string scheme;    // "https"
  std::string userinfo;  // "user:pass" (percent-encoded as written)
  std::string authority; // host[:port]
  std::string path;      // "/simple/x/" (may carry ?query)
};

// The one URL parser (util/url.hpp), in the shape the page resolution below uses.
UrlParts split_url(const std::string& url) {
  UrlParts p;
  auto u = util::parse_url(url);
  if (!u) {
    p.path = url;
    return p;
  }
  p.scheme = u->scheme;
  p.userinfo = u->userinfo;
  p.authority = u->authority();
  p.path = u->path + (u->has_query ? "?" + u->query : "") + (u->has_fragment ? "#" + u->fragment : "");
  return p;
}

// Removes "." and ".." segments (RFC 3986 5.2.4).
std::string remove_dot_segments(const std::string& path) {
  std::string query;
  std::string p = path;
  if (auto q = p.find('?'); q != std::string::npos) {
    query = p.substr(q);
    p.resize(q);
  }
  std::vector<std::string> out;
  std::size_t i = 0;
  bool trailing = false;
  while (i <= p.size()) {
    auto j = p.find('/', i);
    std::string seg = p.substr(i, j == std::string::npos ? std::string::npos : j - i);
    trailing = false;
    if (seg == "..") {
      if (!out.empty()) {
        out.pop_back();
      }
      trailing = true;
    } else if (seg == ".") {
      trailing = true;
    } else if (!(seg.empty() && i == 0)) {
      out.push_back(seg);
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
  std::string r;
  for (const auto& s : out) {
    r += "/" + s;
  }
  if (trailing || r.empty()) {
    r += "/";
  }
  return r + query;
}

std::string decode_entities(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    auto semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 10) {
      out.push_back(s[i]);
      continue;
    }
    std::string ent = s.substr(i + 1, semi - i - 1);
    static const std::map<std::string, char> named = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    if (auto it = named.find(ent); it != named.end()) {
      out.push_back(it->second);
    } else if (ent.size() > 1 && ent[0] == '#') {
      long cp = ent[1] == 'x' || ent[1] == 'X' ? std::strtol(ent.c_str() + 2, nullptr, 16)
                                               : std::strtol(ent.c_str() + 1, nullptr, 10);
      if (cp > 0 && cp < 0x80) {
        out.push_back(static_cast<char>(cp));
      } else {
        out += "&" + ent + ";"; // not ASCII: left as written (never in file names)
      }
    } else {
      out += "&" + ent + ";";
    }
    i = semi;
  }
  return out;
}

// Attributes of a tag's inside ("a href=x data-yanked"), names lower-cased.
std::map<std::string, std::string> tag_attributes(const std::string& inside) {
  std::map<std::string, std::string> attrs;
  std::size_t i = 0;
  // Skip the tag name.
  while (i < inside.size() && !std::isspace(static_cast<unsigned char>(inside[i]))) {
    ++i;
  }
  while (i < inside.size()) {
    while (i < inside.size() && (std::isspace(static_cast<unsigned char>(inside[i])) || inside[i] == '/')) {
      ++i;
    }
    std::size_t n0 = i;
    while (i < inside.size() && inside[i] != '=' && !std::isspace(static_cast<unsigned char>(inside[i])) &&
           inside[i] != '/') {
      ++i;
    }
    std::string name = util::ascii_lower(inside.substr(n0, i - n0));
    while (i < inside.size() && std::isspace(static_cast<unsigned char>(inside[i]))) {
      ++i;
    }
    std::string value;
    if (i < inside.size() && inside[i] == '=') {
      ++i;
      while (i < inside.size() && std::isspace(static_cast<unsigned char>(inside[i]))) {
        ++i;
      }
      if (i < inside.size() && (inside[i] == '"' || inside[i] == '\'')) {
        char q = inside[i++];
        auto end = inside.find(q, i);
        value = inside.substr(i, end == std::string::npos ? std::string::npos : end - i);
        i = end == std::string::npos ? inside.size() : end + 1;
      } else {
        std::size_t v0 = i;
        while (i < inside.size() && !std::isspace(static_cast<unsigned char>(inside[i]))) {
          ++i;
        }
        value = inside.substr(v0, i - v0);
      }
    }
    if (!name.empty()) {
      attrs[name] = decode_entities(value);
    }
  }
  return attrs;
}

// "sha256=HEX" (a fragment or a metadata attribute) -> HEX; "" otherwise.
std::string sha256_of_fragment(const std::string& fragment) {
  if (fragment.rfind("sha256=", 0) == 0) {
    return util::ascii_lower(fragment.substr(7));
  }
  return "";
}

std::string file_name_of(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  return util::percent_decode(path.substr(path.rfind('/') + 1));
}

IndexFile file_from_href(const std::string& href, const std::string& base, const std::string& page) {
  IndexFile f;
  std::string fragment;
  std::string target = href;
  if (auto hash = target.find('#'); hash != std::string::npos) {
    fragment = target.substr(hash + 1);
    target.resize(hash);
  }
  f.url = resolve_url(base, target);
  f.filename = file_name_of(f.url);
  f.sha256 = sha256_of_fragment(fragment);
  f.page = page;
  return f;
}

bool is_distribution(const std::string& filename) {
  auto ends = [&](const char* suffix) {
    std::string s = suffix;
    return filename.size() > s.size() && filename.compare(filename.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".whl") || ends(".tar.gz") || ends(".zip") || ends(".tar.bz2") || ends(".tgz");
}

std::string auth_header_for(const std::string& userinfo) {
  return "Authorization: Basic " + util::base64_encode(util::percent_decode(userinfo));
}

bool is_local(const std::string& source) {
  return source.rfind("file://", 0) == 0 || source.find("://") == std::string::npos;
}

fs::path local_path(const std::string& source) {
  return source.rfind("file://", 0) == 0 ? fs::path(util::percent_decode(source.substr(7))) : fs::path(source);
}

} // namespace

// ---- parsers ----

std::string resolve_url(const std::string& base, const std::string& ref) {
  // Absolute when it starts with a scheme (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":").
  if (auto c = ref.find("://"); c != std::string::npos && c > 0 && std::isalpha(static_cast<unsigned char>(ref[0])) &&
                                std::all_of(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(c), [](char ch) {
                                  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' ||
                                         ch == '.';
                                })) {
    return ref;
  }
  UrlParts b = split_url(base);
  std::string prefix = b.scheme + "://" + (b.userinfo.empty() ? "" : b.userinfo + "@") + b.authority;
  if (ref.rfind("//", 0) == 0) {
    return b.scheme + ":" + ref;
  }
  if (!ref.empty() && ref[0] == '/') {
    return prefix + remove_dot_segments(ref);
  }
  std::string base_path = b.path.substr(0, b.path.find('?'));
  if (ref.empty()) {
    return prefix + b.path;
  }
  if (ref[0] == '?') {
    return prefix + base_path + ref;
  }
  std::string dir = base_path.substr(0, base_path.rfind('/') + 1);
  return prefix + remove_dot_segments(dir + ref);
}

std::string file_project(const std::string& filename) {
  if (filename.size() > 4 && filename.compare(filename.size() - 4, 4, ".whl") == 0) {
    auto dash = filename.find('-');
    return dash == std::string::npos ? "" : normalize_project_name(filename.substr(0, dash));
  }
  if (!is_distribution(filename)) {
    return "";
  }
  // An sdist: NAME-VERSION.ext, the version starting at the last '-' followed by a digit.
  for (std::size_t i = filename.size(); i-- > 0;) {
    if (filename[i] == '-' && i + 1 < filename.size() && std::isdigit(static_cast<unsigned char>(filename[i + 1]))) {
      return normalize_project_name(filename.substr(0, i));
    }
  }
  return "";
}

std::vector<IndexFile> parse_html_page(const std::string& html, const std::string& page_url) {
  std::vector<IndexFile> out;
  std::string base = page_url;
  std::string page = redact_url(page_url);
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      auto end = html.find("-->", i);
      i = end == std::string::npos ? html.size() : end + 3;
      continue;
    }
    auto close = html.find('>', i);
    if (close == std::string::npos) {
      break;
    }
    std::string inside = html.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string name = util::ascii_lower(inside.substr(0, inside.find_first_of(" \t\r\n/")));
    if (name == "base") {
      auto attrs = tag_attributes(inside);
      if (auto h = attrs.find("href"); h != attrs.end() && !h->second.empty()) {
        base = resolve_url(page_url, h->second);
      }
      continue;
    }
    if (name != "a") {
      continue;
    }
    auto attrs = tag_attributes(inside);
    auto href = attrs.find("href");
    if (href == attrs.end() || href->second.empty()) {
      continue;
    }
    IndexFile f = file_from_href(href->second, base, page);
    if (!is_distribution(f.filename)) {
      continue;
    }
    // The link's text, HTML-unescaped: when it is a distribution's file name (PEP 503
    // says it should be), it must be the URL's. Other text ("download") is not compared.
    std::size_t text_end = i;
    while ((text_end = html.find('<', text_end)) != std::string::npos &&
           util::ascii_lower(html.substr(text_end, 3)) != "</a") {
      ++text_end;
    }
    if (text_end != std::string::npos) {
      std::string text = decode_entities(html.substr(i, text_end - i));
      auto b = text.find_first_not_of(" \t\r\n");
      auto e = text.find_last_not_of(" \t\r\n");
      text = b == std::string::npos ? std::string() : text.substr(b, e - b + 1);
      if (is_distribution(text) && text.find_first_of("<>/") == std::string::npos && text != f.filename) {
        f.listed_as = text;
      }
    }
    if (auto rp = attrs.find("data-requires-python"); rp != attrs.end()) {
      f.requires_python = rp->second;
    }
    if (auto y = attrs.find("data-yanked"); y != attrs.end()) {
      f.yanked = y->second;
    }
    for (const char* key : {"data-core-metadata", "data-dist-info-metadata"}) {
      auto m = attrs.find(key);
      if (m != attrs.end() && m->second != "false" && !f.metadata_sha256) {
        f.metadata_sha256 = sha256_of_fragment(m->second);
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<IndexFile> parse_json_page(const std::string& text, const std::string& page_url) {
  std::vector<IndexFile> out;
  std::string page = redact_url(page_url);
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) {
      throw Error(ErrorKind::input, page + ": not a PEP 691 project page (no \"files\" array)");
    }
    for (const auto& e : j["files"]) {
      IndexFile f = file_from_href(e.at("url").get<std::string>(), page_url, page);
      if (e.contains("filename") && e["filename"].is_string() && e["filename"].get<std::string>() != f.filename) {
        f.listed_as = e["filename"].get<std::string>();
      }
      if (e.contains("hashes") && e["hashes"].is_object() && e["hashes"].contains("sha256")) {
        f.sha256 = util::ascii_lower(e["hashes"]["sha256"].get<std::string>());
      }
      if (e.contains("size") && e["size"].is_number_integer()) {
        f.size = e["size"].get<std::int64_t>();
      }
      if (e.contains("requires-python") && e["requires-python"].is_string()) {
        f.requires_python = e["requires-python"].get<std::string>();
      }
      if (e.contains("yanked")) {
        if (e["yanked"].is_string()) {
          f.yanked = e["yanked"].get<std::string>();
        } else if (e["yanked"].is_boolean() && e["yanked"].get<bool>()) {
          f.yanked = "";
        }
      }
      for (const char* key : {"core-metadata", "dist-info-metadata"}) {
        if (!e.contains(key) || f.metadata_sha256) {
          continue;
        }
        const auto& m = e[key];
        if (m.is_object()) {
          f.metadata_sha256 = m.contains("sha256") ? util::ascii_lower(m["sha256"].get<std::string>()) : "";
        } else if (m.is_boolean() && m.get<bool>()) {
          f.metadata_sha256 = "";
        }
      }
      if (is_distribution(f.filename)) {
        out.push_back(std::move(f));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, page + ": malformed PEP 691 JSON page: " + e.what(),
                "check the index URL; a mirror that cannot serve JSON should answer with HTML");
  }
  return out;
}

std::optional<std::pair<std::string, std::string>> netrc_lookup(const fs::path& netrc, const std::string& host) {
  if (netrc.empty()) {
    return std::nullopt;
  }
  std::ifstream in(netrc);
  if (!in) {
    return std::nullopt;
  }
  std::string hostname = host.substr(0, host.rfind(':') == std::string::npos ? host.size() : host.rfind(':'));
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) {
    tokens.push_back(t);
  }
  std::optional<std::pair<std::string, std::string>> match, fallback;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    bool is_default = tokens[i] == "default";
    if (tokens[i] == "macdef") {
      break; // macros run to a blank line; nothing after them is read
    }
    if (!is_default && !(tokens[i] == "machine" && i + 1 < tokens.size())) {
      continue;
    }
    std::string machine = is_default ? "" : tokens[++i];
    std::pair<std::string, std::string> cred;
    for (std::size_t k = i + 1; k + 1 < tokens.size() && tokens[k] != "machine" && tokens[k] != "default"; k += 2) {
      if (tokens[k] == "login") {
        cred.first = tokens[k + 1];
      } else if (tokens[k] == "password") {
        cred.second = tokens[k + 1];
      }
      i = k + 1;
    }
    if (!is_default && (machine == host || machine == hostname) && !match) {
      match = cred;
    } else if (is_default && !fallback) {
      fallback = cred;
    }
  }
  return match ? match : fallback;
}

// ---- the client ----

// What the client keeps per host: the TLS policy and the credentials (Basic, from a
// configured URL's userinfo or netrc). Index servers (devpi, Artifactory, Nexus,
// GitLab) take Basic auth on every request; there is no token dance to do.
struct PackageIndex::Host {
  std::string authority;
  registry::TlsPolicy tls;
  std::string auth_header; // "" for none
};

PackageIndex::PackageIndex(IndexSources sources, std::shared_ptr<Transport> http, ClientOptions options, Stats& stats)
    : m_sources(std::move(sources)), m_options(std::move(options)), m_stats(stats),
      m_transport(std::move(http), registry::retry_options(m_options), &m_stats.retries) {}

namespace {

// A transfer to the index that failed for good, as the error users see.
[[noreturn]] void fail_transport(const TransportFailure& f, const std::string& what, const std::string& authority,
                                 int attempts, const std::string& hint) {
  std::string where = what + ": " + authority + ": ";
  if (f.tls) {
    throw Error(ErrorKind::network, where + "TLS failed: " + f.what(),
                "trust the index's CA with --ca-file CA.pem (or add it to /etc/ssl/certs); for an index without "
                "trusted TLS, pass --insecure-registry " +
                    authority);
  }
  throw Error(ErrorKind::network,
              where + f.what() +
                  (f.retryable && attempts > 1 ? " (gave up after " + std::to_string(attempts) + " attempts)" : ""),
              hint);
}

} // namespace

PackageIndex::~PackageIndex() = default;

PackageIndex::Host& PackageIndex::host_for(const std::string& url) {
  UrlParts p = split_url(url);
  if (p.scheme == "http" && !m_options.insecure.count(p.authority) && !util::is_loopback_authority(p.authority)) {
    // pip ignores a plain-HTTP index that is not a trusted host or a loopback address (a
    // secure origin to pip); we refuse it, and before any request, so no credential
    // crosses the network in the clear.
    throw Error(ErrorKind::input, redact_url(url) + ": the package index is plain HTTP",
                "use https, or allow this host explicitly with --insecure-registry " + p.authority +
                    " (or --insecure)");
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  auto& h = m_hosts[p.authority];
  if (!h) {
    h = std::make_unique<Host>();
    h->authority = p.authority;
    h->tls.verify = m_options.insecure.count(p.authority) == 0;
    h->tls.ca_file = m_options.ca_file;
    // Userinfo given on any configured URL of this host applies to the host (pip
    // sends an index's credentials to the files it links on the same host).
    for (const auto& list : {m_sources.indexes, m_sources.find_links}) {
      for (const auto& src : list) {
        UrlParts s = split_url(src);
        if (s.authority == p.authority && !s.userinfo.empty() && h->auth_header.empty()) {
          h->auth_header = auth_header_for(s.userinfo);
        }
      }
    }
    if (h->auth_header.empty()) {
      if (auto cred = netrc_lookup(m_sources.netrc, p.authority)) {
        h->auth_header = auth_header_for(cred->first + ":" + cred->second);
      }
    }
  }
  return *h;
}

std::optional<Response> PackageIndex::get(const std::string& url, const std::vector<std::string>& headers,
                                          const std::string& what, bool missing_ok) {
  Host& h = host_for(url);
  UrlParts p = split_url(url);
  std::string clean = p.scheme + "://" + p.authority + p.path;
  Call c;
  c.tls = h.tls;
  c.log_prefix = redact_url(url) + ": ";
  c.make = [&]() {
    ++m_requests;
    Request q;
    q.url = clean;
    q.headers = headers;
    q.max_body = 64u << 20; // the simple page of a project with thousands of files; larger fails
    if (!h.auth_header.empty()) {
      q.headers.push_back(h.auth_header);
    }
    return q;
  };
  std::optional<Response> r;
  try {
    r = m_transport.call(c);
  } catch (const TransportFailure& f) {
    fail_transport(f, what, p.authority, m_options.max_attempts,
                   "check the index URL (spec 'index', the lock's -i, PIP_INDEX_URL or pip.conf) and that the host "
                   "is reachable; --retries sets how often to try");
  }
  if (!r) {
    throw Error(ErrorKind::network, what + ": no answer from " + p.authority);
  }
  if (missing_ok && (r->status == 404 || r->status == 410)) {
    return std::nullopt;
  }
  if (r->status == 401 || r->status == 403) {
    throw Error(ErrorKind::auth,
                what + ": " + redact_url(url) + " answered " + std::to_string(r->status) +
                    (h.auth_header.empty() ? " and no credentials were sent" : " to the credentials sent"),
                "give the index credentials in its URL (https://USER:TOKEN@host/simple) or in ~/.netrc "
                "(machine " +
                    p.authority.substr(0, p.authority.rfind(':')) + " login USER password TOKEN)");
  }
  if (r->status < 200 || r->status >= 300) {
    throw Error(ErrorKind::registry, what + ": " + redact_url(url) + " answered HTTP " + std::to_string(r->status),
                "check the index URL and that the index serves the simple API");
  }
  return r;
}

std::vector<IndexFile> PackageIndex::find_links_files() {
  std::vector<IndexFile> all;
  for (const auto& src : m_sources.find_links) {
    if (is_local(src)) {
      fs::path dir = local_path(src);
      std::error_code ec;
      if (fs::is_directory(dir, ec)) {
        std::vector<fs::path> names;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
          names.push_back(it->path());
        }
        std::sort(names.begin(), names.end());
        for (const auto& path : names) {
          IndexFile f;
          f.filename = path.filename().string();
          f.url = "file://" + fs::absolute(path).string();
          f.page = dir.string();
          if (is_distribution(f.filename)) {
            all.push_back(f);
          }
        }
        continue;
      }
      std::ifstream in(dir);
      if (!in) {
        throw Error(ErrorKind::io, "find-links " + dir.string() + ": not a readable directory or page",
                    "point find_links at a directory of wheels or an HTML page of links");
      }
      std::stringstream ss;
      ss << in.rdbuf();
      auto files = parse_html_page(ss.str(), "file://" + fs::absolute(dir).string());
      all.insert(all.end(), files.begin(), files.end());
      continue;
    }
    auto r = get(src, {"Accept: text/html"}, "reading the find-links page " + redact_url(src), false);
    auto files = parse_html_page(r->body, without_userinfo(src));
    all.insert(all.end(), files.begin(), files.end());
  }
  return all;
}

std::vector<IndexFile> PackageIndex::files(const std::string& project) {
  std::string name = normalize_project_name(project);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (auto it = m_pages.find(name); it != m_pages.end()) {
      return it->second;
    }
  }
  std::vector<IndexFile> out;
  for (const auto& root : m_sources.indexes) {
    std::string url = without_userinfo(root) + (root.empty() || root.back() != '/' ? "/" : "") + name + "/";
    auto r = get(url, {kAcceptSimple}, "reading the index page of " + name, true);
    if (!r) {
      continue;
    }
    std::string type = util::ascii_lower(r->headers.get("content-type"));
    // Relative links resolve against the page where the answer came from: after a
    // redirect (a virtual repository, http to https), that is the redirect's target.
    std::string page_url = r->effective_url.empty() ? url : without_userinfo(r->effective_url);
    auto files = type.find("application/vnd.pypi.simple.v1+json") != std::string::npos
                     ? parse_json_page(r->body, page_url)
                     : parse_html_page(r->body, page_url);
    for (auto& f : files) {
      if (!f.listed_as.empty()) {
        if (m_options.log) {
          m_options.log(1, redact_url(page_url) + ": a link names " + f.listed_as + " but leads to " + f.filename +
                               ": ignored");
        }
        continue;
      }
      // A page lists one project's files: another project's file is never taken for
      // this one (pip: "wrong project name").
      if (file_project(f.filename) != name) {
        if (m_options.log) {
          m_options.log(1, redact_url(page_url) + ": " + f.filename + " belongs to project '" +
                               file_project(f.filename) + "', not " + name + ": ignored");
        }
        continue;
      }
      out.push_back(std::move(f));
    }
  }
  if (!m_sources.find_links.empty()) {
    // One fetch of the flat pages for all projects; other threads wait for it.
    std::lock_guard<std::mutex> lock(m_find_links_mutex);
    if (!m_find_links) {
      m_find_links = find_links_files();
    }
  } else {
    std::lock_guard<std::mutex> lock(m_find_links_mutex);
    if (!m_find_links) {
      m_find_links.emplace();
    }
  }
  for (const auto& f : *m_find_links) {
    if (file_project(f.filename) != name) {
      continue;
    }
    if (!f.listed_as.empty()) {
      if (m_options.log) {
        m_options.log(1, f.page + ": a link names " + f.listed_as + " but leads to " + f.filename + ": ignored");
      }
      continue;
    }
    out.push_back(f);
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pages[name] = out;
  return out;
}

std::string PackageIndex::metadata(const IndexFile& file) {
  std::string url = file.url + ".metadata";
  auto r = get(url, {}, "reading the metadata of " + file.filename, false);
  if (file.metadata_sha256 && !file.metadata_sha256->empty()) {
    std::string got = util::sha256_hex(r->body);
    if (got != *file.metadata_sha256) {
      throw Error(ErrorKind::integrity,
                  redact_url(url) + ": sha256 " + got + " differs from the " + *file.metadata_sha256 +
                      " the index page advertises",
                  "the index serves altered metadata; use another mirror");
    }
  }
  return r->body;
}

void PackageIndex::download(const IndexFile& file, const std::function<void(const char*, std::size_t)>& write,
                            const std::function<void()>& restart) {
  if (file.url.rfind("file://", 0) == 0) {
    fs::path path = local_path(file.url);
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw Error(ErrorKind::io, "cannot read " + path.string());
    }
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in.gcount() > 0) {
        write(buf.data(), static_cast<std::size_t>(in.gcount()));
      }
    }
    return;
  }
  Host& h = host_for(file.url);
  UrlParts p = split_url(file.url);
  std::string clean = p.scheme + "://" + p.authority + p.path;
  std::int64_t written = 0;
  bool partial = false; // the current attempt's response is a 206 for the rest
  Call c;
  c.tls = h.tls;
  c.log_prefix = file.filename + ": ";
  c.make = [&]() {
    ++m_requests;
    Request q;
    q.url = clean;
    if (!h.auth_header.empty()) {
      q.headers.push_back(h.auth_header);
    }
    if (written > 0) {
      q.headers.push_back("Range: bytes=" + std::to_string(written) + "-");
      m_transport.log(1, "resuming " + file.filename + " at byte " + std::to_string(written));
    }
    q.on_body_start = [&](long status) {
      partial = status == 206;
      if (!partial && written > 0) {
        restart(); // the server ignored the Range: take the whole file again
        written = 0;
      }
    };
    q.sink = [&](const char* data, std::size_t len) {
      write(data, len);
      written += static_cast<std::int64_t>(len);
      m_stats.bytes_downloaded += static_cast<std::int64_t>(len);
      return true;
    };
    return q;
  };
  c.judge = [&](const Response& r) -> std::optional<Attempt::Verdict> {
    if (r.status == 416 && written > 0) {
      return Attempt::Verdict::finish; // asked past the end: the file is complete
    }
    return std::nullopt;
  };
  std::optional<Response> r;
  try {
    r = m_transport.call(c);
  } catch (const TransportFailure& f) {
    fail_transport(f, "downloading " + file.filename + " (" + redact_url(file.url) + ")", h.authority,
                   m_options.max_attempts,
                   "check that the index host is reachable; a retry resumes where the transfer stopped");
  }
  if (!r || r->status == 416) {
    return;
  }
  if (r->status == 401 || r->status == 403) {
    throw Error(ErrorKind::auth,
                "downloading " + file.filename + ": " + redact_url(file.url) + " answered " + std::to_string(r->status),
                "give the index credentials in its URL or in ~/.netrc");
  }
  if (r->status != 200 && r->status != 206) {
    throw Error(ErrorKind::registry,
                "downloading " + file.filename + ": " + redact_url(file.url) + " answered HTTP " +
                    std::to_string(r->status),
                "the index lists a file it does not serve; try again later or use another mirror");
  }
}

} // namespace python
