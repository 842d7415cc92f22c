#pragma once
// `warm hosts`: containerd's registry host configuration (certs.d/<host>/hosts.toml):
// the mirrors of one upstream registry, tried in order, with their capabilities, and
// the upstream itself as the `server` fallback. Files are written into a directory
// the user names and never installed; the containerd setting that reads them
// (`config_path`) is printed for config versions 2 and 3.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace warm {

struct HostsOptions {
  std::string upstream;                  // REG: host[:port], a URL, docker.io, or _default
  std::vector<std::string> mirrors;      // URLs (https:// assumed when no scheme), in order
  std::vector<std::string> capabilities; // of each mirror: pull, resolve, push
  bool skip_verify = false;              // for https mirrors, only when asked
  std::filesystem::path ca_file;         // a CA for https mirrors, copied next to hosts.toml
};

struct HostsFile {
  std::string host_dir;             // the directory name containerd looks up ("docker.io", "127.0.0.1:5000")
  std::string server;               // the upstream URL ("" for _default)
  std::vector<std::string> mirrors; // normalised URLs
  std::string text;                 // hosts.toml
  std::string ca_name;              // the CA's file name beside hosts.toml ("" when none)
};

// Checks the options (usage errors name the flag and the value) and renders the file.
HostsFile render_hosts(const HostsOptions& opt);

struct HostsWritten {
  std::filesystem::path hosts_toml;
  std::filesystem::path ca; // empty when none
};
// Writes DIR/<host>/hosts.toml (and the CA) atomically.
HostsWritten write_hosts(const HostsFile& f, const HostsOptions& opt, const std::filesystem::path& dir);

// The containerd setting that makes the CRI read a certs.d directory, for config
// version 2 (containerd 1.x) or 3 (containerd 2.x).
std::string config_path_snippet(const std::string& certs_dir, int version);

} // namespace warm
