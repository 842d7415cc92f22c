#pragma once
// spec.yaml -> BuildSpec (docs/spec.md). Every error names file:line:column, the
// field path, and a fix; unknown keys get a "did you mean".
#include "oci/image.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace spec {

namespace fs = std::filesystem;

struct OwnerSpec {
  std::int64_t uid = 0;
  std::int64_t gid = 0;
  std::string uname;
  std::string gname;
};

// A copy rule's remote source (`url:` in place of `from:`): a file fetched over HTTP(S)
// and checked against its SHA-256, copied as it is or extracted.
struct RemoteSpec {
  std::string url;        // http(s):// (credentials from netrc, never here)
  std::string sha256;     // 64 lower-case hex digits; "" while the spec leaves it to the sources lock
  std::int64_t size = -1; // bytes, when given
  bool extract = false;   // unpack (tar of any compression, or zip) rather than copy the file
  int strip_components = 0;
  std::vector<std::string> include; // globs of the members kept (after stripping); empty: all
  std::string filename;             // the file's name when copied as it is (the URL's last segment)
  // `git:` in place of `url:`: `url` is the repository, exported at this full commit
  // (40 hex digits) without .git, as an extracted archive is (strip_components, include).
  bool git = false;
  std::string git_commit; // "" while only `ref` is given and the sources lock has no pin for it
  std::string git_ref;    // a branch or tag (`ref:`), pinned to git_commit by `paddle-image lock --sources`
  // Where the pin came from: "spec" (sha256 or commit written in the spec), "lock" (the
  // sources lock), "" (not pinned: a build refuses it).
  std::string pinned_by;
  bool is_git() const { return git; }
  bool pinned() const { return git ? !git_commit.empty() : !sha256.empty(); }
};

// A copy rule's image source (`image:` with `from:` a path in it): files another image
// holds, read through its layers (only those that hold the path), pinned by the
// manifest digest for the spec's platform.
struct ImageSourceSpec {
  std::string ref;       // as written, without a digest ("nvcr.io/nvidia/tritonserver:21.10-py3", "oci:stage:v1")
  std::string resolved;  // the same with an oci: or docker-archive: path made absolute against the spec's directory
  std::string path;      // the absolute path in the image
  std::string digest;    // "sha256:HEX": the manifest for the spec's platform; "" while the sources lock lacks it
  std::string pinned_by; // "spec" (REF@sha256:... or digest:), "lock", "" (not pinned: a build refuses it)
  bool pinned() const { return !digest.empty(); }
};

struct CopySpec {
  fs::path from; // absolute (resolved against the spec's directory); for a remote source, set by the build
  std::optional<RemoteSpec> remote;
  std::optional<ImageSourceSpec> image;
  // `symlink: TARGET` in place of a source: a symbolic link at `to` pointing at TARGET
  // (as `ln -s TARGET TO` makes it; an absolute TARGET is an image path).
  std::optional<std::string> symlink;
  // `directory: PATH` in place of a source: a directory at PATH (held in `to`), empty
  // unless other rules put something in it, with `mode` (default 0755) and `owner`, as
  // `mkdir -p [-m MODE] PATH` makes it (its missing parents 0755, the layer's owner).
  bool directory = false;
  std::string to;
  std::vector<std::string> exclude;
  std::optional<std::uint32_t> mode;
  std::optional<std::uint32_t> dir_mode;
  std::optional<OwnerSpec> owner;
  bool allow_absolute_symlinks = false;
  bool allow_outside = false; // `from` may lie outside the spec's directory (after symlinks)
  // .paddleimageignore patterns for what lies beneath `from` (relative to `from`'s
  // place in the spec directory, see ignore_prefix); '!' re-includes.
  std::vector<std::string> ignore;
  std::string ignore_prefix; // `from` relative to the spec's directory ("" for the directory itself)
  std::string origin;        // "spec.yaml:12:7"
};

// `compression: gpu-node`: the setting recommended for images GPU nodes pull (docs/spec.md
// "Settings for GPU nodes"): zstd at this level. Fixed, so a spec that names it keeps its
// digests from release to release.
inline constexpr int k_gpu_node_zstd_level = 12;
// `split`: the most parts one layer becomes (a node's overlay mount names every layer
// in one option string of a page: dozens of layers in all, not hundreds), and the
// smallest part size accepted.
inline constexpr std::size_t k_max_split_parts = 16;
inline constexpr std::uint64_t k_min_split_bytes = std::uint64_t{1} << 20;

struct CompressionSpec {
  oci::Compression format = oci::Compression::gzip;
  bool format_set = false;                                // a layer without format inherits the top-level one
  int level = oci::default_level(oci::Compression::gzip); // resolved: the format's default when not given
};

// Each layer kind's own fields, its spec type (docs/spec.md "Layers"). A kind is parsed
// by one function in spec/layer_specs.cpp, registered in that file's table of kinds.

// `files` and `data` layers (the two differ only in what the report and the SBOM call
// them): copy rules, shipped as one layer or split into parts.
struct CopyLayerSpec {
  std::vector<CopySpec> copies;
  // `split` (the layer's, else the top level's): ship the layer as parts of about this
  // many bytes of file content; 0: one layer.
  std::uint64_t split = 0;
};

// `wheels` layers: a directory of .whl files, or a hash-locked requirements file whose
// wheels come from a package index.
struct WheelsLayerSpec {
  fs::path dir; // wheels from a directory ("" for wheels from an index)
  std::optional<fs::path> lock_file;
  std::string lock_origin; // "spec.yaml:12:13" of the lock key
  // Wheels from a package index: `lock` without `dir`. `index` (first the primary, then
  // extra indexes) and `find_links` as written (paths made absolute); empty means the
  // lock's own -i/-f lines, then PIP_INDEX_URL / pip.conf, then PyPI.
  std::vector<std::string> indexes;
  std::vector<std::string> find_links;
  // wheels.allow_conflicts: install even when a version the layer brings breaks a
  // requirement of a distribution installed below it (a warning instead of an error).
  bool allow_conflicts = false;
  // wheels.uninstall: the projects the layer uninstalls from what it lands on, as `pip
  // uninstall -y NAME...` does (RECORD's files whited out, the .dist-info gone); such a
  // layer installs nothing (no dir, no lock).
  std::vector<std::string> uninstall;
  std::string uninstall_origin; // "spec.yaml:12:18" of the uninstall key
  bool uninstalls() const { return !uninstall.empty(); }
  bool from_index() const { return dir.empty() && !uninstalls(); }
};

// One apt repository of a debs layer: `deb URL SUITE COMPONENTS`, signed by `keyring`.
struct DebRepositorySpec {
  std::string url; // http(s):// or file:// archive root (credentials from netrc, never here)
  std::string suite;
  std::vector<std::string> components; // ["main"] when not given
  fs::path keyring;                    // absolute (resolved against the spec's directory)
  std::string origin;
};

// `debs` layers: Debian packages by name (and optionally version), resolved by
// `paddle-image lock` against the base's dpkg status into the lock file, installed
// from it.
struct DebsLayerSpec {
  std::vector<std::string> packages; // "name" or "name=version", in the spec's order
  std::vector<DebRepositorySpec> repositories;
  fs::path lock_file;
  std::string lock_origin;
};

// `accounts` layers: users and groups merged into the base's /etc/passwd and /etc/group
// (and /etc/shadow and /etc/gshadow, locked, where the base has them), home directories
// made with their owner, as `groupadd` and `useradd` do (docs/spec.md "Accounts").
struct GroupSpec {
  std::string name;
  std::int64_t gid = 0;
  std::string origin; // "spec.yaml:12:9"
};

struct UserSpec {
  std::string name;
  std::int64_t uid = 0;
  std::optional<std::int64_t> gid; // none: a group named as the user, gid = uid (useradd's user group)
  std::string home;                // absolute; /home/NAME when not given
  bool create_home = true;         // useradd -m: the directory, owned by the user, /etc/skel's files in it
  std::uint32_t home_mode = 0755;  // Debian's useradd: 0777 & ~UMASK 022
  std::string shell = "/bin/sh";   // Debian's useradd default (SHELL in /etc/default/useradd)
  std::string comment;             // the GECOS field
  std::vector<std::string> groups; // supplementary groups, by name
  std::string origin;
};

struct AccountsLayerSpec {
  std::vector<GroupSpec> groups; // made first, in order
  std::vector<UserSpec> users;
};

struct LayerSpec {
  enum class Kind { wheels, files, data, debs, accounts };
  std::string name;
  Kind kind = Kind::files;
  std::variant<CopyLayerSpec, WheelsLayerSpec, DebsLayerSpec, AccountsLayerSpec> body; // the kind's own fields
  std::optional<CompressionSpec> compression;
  std::optional<OwnerSpec> owner;
  std::string origin;

  // The kind's fields: nullptr for a layer of another kind.
  const CopyLayerSpec* as_copy() const { return std::get_if<CopyLayerSpec>(&body); }
  const WheelsLayerSpec* as_wheels() const { return std::get_if<WheelsLayerSpec>(&body); }
  const DebsLayerSpec* as_debs() const { return std::get_if<DebsLayerSpec>(&body); }
  const AccountsLayerSpec* as_accounts() const { return std::get_if<AccountsLayerSpec>(&body); }
  // The kind's fields of a layer known to be of that kind (std::logic_error otherwise).
  const CopyLayerSpec& copy() const;
  CopyLayerSpec& copy();
  const WheelsLayerSpec& wheels() const;
  WheelsLayerSpec& wheels();
  const DebsLayerSpec& debs() const;
  const AccountsLayerSpec& accounts() const;
  // A wheels layer whose wheels come from a package index.
  bool from_index() const { return as_wheels() != nullptr && as_wheels()->from_index(); }
};

// The kind as the spec, the build's report and the SBOM name it: "wheels", "files", "data", "debs",
// "accounts".
const char* kind_name(LayerSpec::Kind kind);
// The kind a name stands for, as kind_name spells it (a report's or an image history's
// kind); nothing for any other name ("base").
std::optional<LayerSpec::Kind> kind_of_name(std::string_view name);
// Whether a layer of this kind ships files copied from the build context (files, data):
// the SBOM lists such a layer as one data component, the provenance as one input.
bool ships_copied_files(LayerSpec::Kind kind);
// Whether `name` is a PEP 508 project name (letters and digits, '.', '_' and '-' inside,
// no version, extras or markers): what wheels.uninstall takes.
bool is_project_name(std::string_view name);

struct PythonSpec {
  std::string version; // "3.11"
  std::string interpreter;
  std::string site_packages;
  std::string scripts_dir;
  std::string prefix;
  std::optional<std::pair<int, int>> glibc; // python.glibc "2.36" -> {2, 36}
  std::string origin;
};

struct RequiresSpec {
  std::string cuda;
  std::string cudnn;
  std::string paddle;
  std::string driver_min;
  std::vector<std::string> gpu_archs;
  // requires.gpu_memory ("40Gi"): the usable GPU memory a node must report, in MiB
  // (rounded up); 0 when not set. Recorded as io.paddle-image.gpu.memory-mib.
  std::uint64_t gpu_memory_mib = 0;
  std::string gpu_memory; // as written
};

// Constraints for `base: auto` (the same as `paddle-image resolve`'s flags).
struct ResolveSpec {
  std::string paddle;
  std::string cuda;
  std::string cudnn;
  bool tensorrt = false;
  std::string python;
  std::vector<std::string> gpus;
  std::vector<std::string> drivers;
  std::string registry = "dockerhub";
  std::string kind = "runtime";
  bool strict_driver = false;
  bool allow_forward_compat = false;
  bool pre = false;                           // consider pre-releases
  std::vector<std::string> matrix;            // extra matrix files (absolute)
  std::string layout;                         // oci:DIR holding the chosen image under its tag
  std::map<std::string, std::string> origins; // field -> "spec.yaml:12:5"
  std::string origin;
};

struct ConfigSpec {
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::vector<std::pair<std::string, std::string>> env; // in file order
  std::string workdir;
  std::string user;
  std::map<std::string, std::string> labels;
  std::vector<std::string> ports; // "8080/tcp"
  std::string stop_signal;
};

struct BuildSpec {
  fs::path file;
  fs::path dir;
  std::string name;
  std::vector<std::string> tags;
  std::string version;
  std::string source;
  std::string base = "scratch"; // as written (recorded in labels; never a host path)
  std::string base_resolved;    // oci: paths made absolute against the spec directory
  std::string base_origin;
  oci::Platform platform = oci::default_platform(); // linux/amd64 or linux/arm64
  std::optional<PythonSpec> python;
  std::optional<ResolveSpec> resolve;
  RequiresSpec requires_;
  std::vector<LayerSpec> layers;
  CompressionSpec compression;
  std::uint64_t split = 0; // the top-level `split` (0: none)
  ConfigSpec config;
  std::optional<std::int64_t> source_date_epoch;
  // .paddleimageignore of the spec's directory, with the implicit leading ".git"
  // (gitignore syntax; later lines win; "!.git" brings .git back).
  std::vector<std::string> ignore;
  // The sources lock (spec/sources_lock.hpp): where `paddle-image lock --sources` writes
  // the sha256 and commits the spec leaves open, beside the spec as STEM.sources.lock.
  fs::path sources_lock;
};

// Largest timestamp accepted anywhere (9999-12-31T23:59:59Z): later dates do not fit the
// RFC 3339 `created` field that skopeo and umoci parse.
inline constexpr std::int64_t k_max_epoch = 253402300799;
// Largest uid/gid written into a layer (4294967295 is (uid_t)-1, "no id").
inline constexpr std::int64_t k_max_id = 4294967294;

// Reads a .paddleimageignore (gitignore syntax: '#' comments, blank lines, '!' negation,
// trailing '/' for directories). Returns the patterns in order; throws Error(input)
// with file:line for a line it cannot use.
std::vector<std::string> read_ignore_file(const fs::path& file);

BuildSpec load(const fs::path& file);
BuildSpec parse(const std::string& text, const fs::path& file);

} // namespace spec
