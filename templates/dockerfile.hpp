#pragma once
// `render dockerfile`: a Dockerfile with the spec's layering (same layer order), from
// plain data (templates/from_spec.hpp fills it in from a parsed spec; no spec file is read here).
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace templates {

// A copy rule's download (url:): its SHA-256, and how it is extracted.
struct DockerDownload {
  std::string url;
  std::string sha256;
  std::string filename;
  bool extract = false;
  int strip_components = 0;
  std::vector<std::string> include;
  bool git = false;       // a git source (url: the repository)
  std::string git_commit; // its commit ("" while only its ref is given and not locked)
  std::string git_ref;
};

struct DockerCopy {
  std::string from; // relative to the build context (the spec's directory), '/' kept for directories
  std::string to;
  std::vector<std::string> exclude;
  std::optional<std::uint32_t> mode;
  std::optional<std::uint32_t> dir_mode;
  std::string chown;            // "UID:GID" or "" (root)
  bool outside_context = false; // allow_outside: `from` lies outside the spec's directory
  // A download (url:) in place of `from` (url empty: none).
  DockerDownload download;
  std::optional<std::string> symlink; // a symlink rule: the link's target, made at `to`
  bool directory = false;             // a directory rule: `to` made with dir_mode and chown
};

struct DockerLayer {
  std::string name;
  std::string kind; // files, data, wheels, debs, accounts
  std::vector<DockerCopy> copies;
  // wheels: a directory (relative), or from an index (wheel_dir empty)
  std::string wheel_dir;
  std::string lock; // relative, "" without one
  std::vector<std::string> indexes;
  std::vector<std::string> find_links;
  std::string chown;                  // the layer's owner "UID:GID" ("" = root)
  std::vector<std::string> debs;      // debs: the packages ("name" or "name=version")
  std::vector<std::string> uninstall; // wheels.uninstall: pip uninstall -y of these
  // accounts: the groupadd and useradd commands, each a shell command line (words quoted)
  std::vector<std::string> accounts;
};

struct DockerConfig {
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;
  std::string user;
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::string> ports;
  std::string stop_signal;
};

struct DockerfileInput {
  std::string spec_file; // as given on the command line (for the header)
  std::string base;      // as written in the spec
  std::string platform;  // "linux/amd64"
  std::string python;    // the interpreter pip runs under ("python3" when the spec names none)
  std::vector<DockerLayer> layers;
  DockerConfig config;
  bool custom_ignore = false; // the spec directory has a .paddleimageignore
};

// The data and the variables the Dockerfile template gets (docs/templates.md).
nlohmann::json dockerfile_data(const DockerfileInput& in);
nlohmann::json dockerfile_schema();
// Renders Dockerfile.mustache (from template_dir when it holds one). An `oci:` or `auto`
// base cannot be a FROM: input error with the fix.
std::string render_dockerfile(const DockerfileInput& in, const std::filesystem::path& template_dir);

} // namespace templates
