#include "warm/hosts.hpp"

#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <toml++/toml.h>

namespace warm {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

// A TOML basic string ("..."), escaped by toml++.
std::string toml_string(const std::string& s) {
  std::ostringstream os;
  toml::value<std::string> v(s);
  os << toml::toml_formatter(v, toml::format_flags::none);
  return os.str();
}

struct Url {
  std::string scheme;
  std::string host; // host[:port]
  std::string path; // "" or "/..."
  std::string str() const { return scheme + "://" + host + path; }
};

bool plain_text(const std::string& s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '"' || c == '\'' || c == '\\' || c == '#' || c == '?') {
      return false;
    }
  }
  return !s.empty();
}

// host[:port]: a DNS name (labels of at most 63 letters, digits, '-' or '_', 253 in
// all), an IPv4 address or a bracketed IPv6 one; the port 1 to 65535. It names a
// directory of hosts.toml files too.
bool host_port(const std::string& hp) {
  std::string host = hp, port;
  if (!hp.empty() && hp[0] == '[') {
    auto close = hp.find(']');
    if (close == std::string::npos) {
      return false;
    }
    host = hp.substr(1, close - 1);
    port = hp.substr(close + 1);
    if (host.empty() || host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
      return false;
    }
  } else {
    auto colon = hp.find(':');
    host = hp.substr(0, colon);
    port = colon == std::string::npos ? "" : hp.substr(colon);
    if (host.empty() || host.size() > 253) {
      return false;
    }
    std::size_t label = 0;
    for (char c : host) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (c == '.') {
        if (label == 0) {
          return false;
        }
        label = 0;
      } else if (!ok || ++label > 63) {
        return false;
      }
    }
  }
  if (!port.empty()) {
    if (port[0] != ':' || port.size() < 2 || port.size() > 6 ||
        port.find_first_not_of("0123456789", 1) != std::string::npos || std::stoi(port.substr(1)) < 1 ||
        std::stoi(port.substr(1)) > 65535) {
      return false;
    }
  }
  return true;
}

// A registry URL as --upstream and --mirror take it: http(s)://host[:port][/path] or a
// bare host[:port] (https), split by util::parse_url (the one URL parser), then held to
// what a hosts.toml can carry: no credentials, query, fragment, spaces or quotes.
Url parse_url(const std::string& text, const std::string& flag, bool allow_path) {
  bool has_scheme = text.find("://") != std::string::npos;
  auto parsed = util::parse_url(has_scheme ? text : "https://" + text);
  if (has_scheme && parsed && parsed->scheme != "http" && parsed->scheme != "https") {
    throw Error(ErrorKind::usage, flag + " '" + text + "': the scheme must be http or https",
                "e.g. " + flag + " http://mirror.cluster.local:5000");
  }
  Url u;
  if (parsed) {
    u.scheme = parsed->scheme;
    u.host = parsed->authority();
    u.path = parsed->path;
    while (u.path.size() > 1 && u.path.back() == '/') {
      u.path.pop_back();
    }
    if (u.path == "/") {
      u.path.clear();
    }
  }
  if (!parsed || !parsed->userinfo.empty() || parsed->has_query || parsed->has_fragment || !host_port(u.host) ||
      (!u.path.empty() && !plain_text(u.path))) {
    throw Error(ErrorKind::usage, flag + " '" + util::escape_bytes(util::redact_url(text)) + "' is not a registry URL",
                "e.g. " + flag + " https://mirror.cluster.local:5000 (no credentials, spaces or quotes)");
  }
  if (!u.path.empty() && !allow_path) {
    throw Error(ErrorKind::usage, flag + " '" + text + "' has a path; name the registry host only",
                "e.g. " + flag + " registry.example.com");
  }
  return u;
}

// --capabilities checked, each once, in the order given; pull and resolve when none.
std::vector<std::string> checked_capabilities(const std::vector<std::string>& given) {
  static const std::vector<std::string> known = {"pull", "resolve", "push"};
  std::vector<std::string> caps;
  for (const auto& c : given) {
    if (std::find(known.begin(), known.end(), c) == known.end()) {
      std::string near = util::closest(c, known);
      throw Error(ErrorKind::usage, "--capabilities: '" + c + "' is not a capability",
                  near.empty() ? "use pull, resolve or push" : "did you mean '" + near + "'?");
    }
    if (std::find(caps.begin(), caps.end(), c) == caps.end()) {
      caps.push_back(c);
    }
  }
  if (caps.empty()) {
    caps = {"pull", "resolve"};
  }
  if (std::find(caps.begin(), caps.end(), "pull") == caps.end()) {
    throw Error(ErrorKind::usage, "--capabilities without pull: containerd would never fetch from the mirror",
                "use --capabilities pull (by digest) or pull,resolve (by tag too)");
  }
  return caps;
}

} // namespace

HostsFile render_hosts(const HostsOptions& opt) {
  HostsFile f;
  std::string up = opt.upstream;
  if (up.empty()) {
    throw Error(ErrorKind::usage, "--upstream is required", "e.g. --upstream registry.example.com");
  }
  if (up == "_default") {
    f.host_dir = "_default"; // every registry without a directory of its own; no server
  } else {
    Url u = parse_url(up, "--upstream", false);
    std::string host = oci::canonical_registry(u.host);
    f.host_dir = host;
    f.server = host == oci::k_docker_hub ? "https://" + std::string(oci::k_docker_hub_api) : u.scheme + "://" + host;
  }
  if (opt.mirrors.empty()) {
    throw Error(ErrorKind::usage, "at least one --mirror is needed",
                "e.g. --mirror http://mirror.cluster.local:5000 (repeat it for more, tried in order)");
  }
  std::vector<Url> mirrors;
  std::set<std::string> seen;
  for (const auto& m : opt.mirrors) {
    Url u = parse_url(m, "--mirror", true);
    if (!seen.insert(u.str()).second) {
      throw Error(ErrorKind::usage, "--mirror '" + m + "' is given twice");
    }
    mirrors.push_back(u);
    f.mirrors.push_back(u.str());
  }
  std::vector<std::string> caps = checked_capabilities(opt.capabilities);
  bool tls = opt.skip_verify || !opt.ca_file.empty();
  bool any_https = std::any_of(mirrors.begin(), mirrors.end(), [](const Url& u) { return u.scheme == "https"; });
  if (tls && !any_https) {
    throw Error(ErrorKind::usage,
                std::string(opt.skip_verify ? "--skip-verify" : "--ca") +
                    " applies to https mirrors, and every --mirror is http",
                "drop it, or name the mirror with https://");
  }
  if (!opt.ca_file.empty()) {
    f.ca_name = opt.ca_file.filename().string();
    if (f.ca_name == "hosts.toml" || !plain_text(f.ca_name)) {
      throw Error(ErrorKind::usage, "--ca '" + opt.ca_file.string() + "': pick a file name like ca.crt");
    }
  }

  std::string t;
  t += "# containerd registry hosts for " + (f.host_dir == "_default" ? std::string("every registry") : f.host_dir) +
       ", written by paddle-image warm hosts.\n";
  t += "# Mirrors are tried in order, then the server. containerd asks a mirror for the same\n";
  t += "# repository path (adding ?ns=" + f.host_dir + "); pulls by digest need \"pull\", by tag \"resolve\" too.\n";
  if (!f.server.empty()) {
    t += "server = " + toml_string(f.server) + "\n";
  }
  std::string cap_list = "[";
  for (std::size_t i = 0; i < caps.size(); ++i) {
    cap_list += (i ? ", " : "") + toml_string(caps[i]);
  }
  cap_list += "]";
  for (const auto& u : mirrors) {
    t += "\n[host." + toml_string(u.str()) + "]\n";
    t += "  capabilities = " + cap_list + "\n";
    if (u.scheme == "https" && opt.skip_verify) {
      t += "  skip_verify = true\n";
    }
    if (u.scheme == "https" && !f.ca_name.empty()) {
      t += "  ca = " + toml_string(f.ca_name) + " # beside this file\n";
    }
  }
  // What containerd would read back: a file it cannot parse is silently ignored.
  try {
    toml::table back = toml::parse(std::string_view(t), std::string("hosts.toml"));
    const toml::table* hosts = back["host"].as_table();
    if (hosts == nullptr || hosts->size() != mirrors.size() ||
        (!f.server.empty() && back["server"].value<std::string>() != f.server)) {
      throw Error(ErrorKind::internal, "hosts.toml for " + f.host_dir + " does not read back as written");
    }
  } catch (const toml::parse_error& e) {
    throw Error(ErrorKind::internal,
                "hosts.toml for " + f.host_dir + " is not valid TOML: " + std::string(e.description()));
  }
  f.text = t;
  return f;
}

HostsWritten write_hosts(const HostsFile& f, const HostsOptions& opt, const fs::path& dir) {
  fs::path host_dir = dir / f.host_dir;
  util::create_dirs(host_dir, "hosts directory");
  HostsWritten w;
  if (!f.ca_name.empty()) {
    std::string pem = util::with_context("--ca", [&] { return util::read_file(opt.ca_file); });
    if (pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      throw Error(ErrorKind::input, "--ca " + opt.ca_file.string() + " holds no PEM certificate",
                  "give the CA certificate (-----BEGIN CERTIFICATE-----) that signed the mirror's certificate");
    }
    w.ca = host_dir / f.ca_name;
    util::write_file_atomic(w.ca, pem);
  }
  w.hosts_toml = host_dir / "hosts.toml";
  util::write_file_atomic(w.hosts_toml, f.text);
  return w;
}

std::string config_path_snippet(const std::string& certs_dir, int version) {
  if (version == 2) {
    return "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = " + toml_string(certs_dir) +
           "\n";
  }
  return "version = 3\n[plugins.\"io.containerd.cri.v1.images\".registry]\n  config_path = " + toml_string(certs_dir) +
         "\n";
}

} // namespace warm
