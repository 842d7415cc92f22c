#pragma once
// The file-system view of a base image: its layers applied bottom to top as overlay
// file systems apply them (whiteouts, opaque directories, a non-directory replacing a
// directory and everything under it) into one tree of paths with type, mode, owner,
// xattrs, size and link target, plus facts read from small files on the way: the
// Python interpreters, glibc, dpkg packages, the installed Python distributions, the
// CUDA and cuDNN versions (the config's ENV first, then the toolkit's version files).
// Built in one streaming pass over the layers (nothing unpacked, file data read only
// for those small files), cached per manifest digest, read by build (the directories
// a layer writes into, the symlinks its destinations pass through, the Python target)
// and shown by `inspect --base-view`.
#include "layers/packages.hpp"
#include "layers/tar.hpp"
#include "layers/tree.hpp"
#include "oci/image.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace layers {

struct ViewNode {
  char type = '0'; // '0' file, '5' directory, '2' symlink, '1' hard link, '3'/'4'/'6' devices, FIFO
  std::uint32_t mode = 0;
  Owner owner;
  std::int64_t size = 0;
  std::string target; // symlink or hard-link target
  std::map<std::string, std::string> xattrs;
  int layer = 0; // index (from 0, bottom) of the layer that wrote it last
  bool operator==(const ViewNode&) const = default;
};

struct BaseFacts {
  std::vector<std::string> interpreters; // "/usr/bin/python3.10", in path order
  std::optional<std::pair<int, int>> glibc;
  std::vector<Package> dpkg;       // from var/lib/dpkg/status (installed ones)
  std::string cuda, cuda_source;   // "12.0.1", "ENV CUDA_VERSION" or the file
  std::string cudnn, cudnn_source; // "8.9.1", ...
  std::string os_id, os_version_id;
  std::map<std::string, std::string> ld_so_conf; // etc/ld.so.conf.d/* under 64 KiB: path -> content
  bool operator==(const BaseFacts&) const = default;
};

class BaseView {
public:
  // Applies one layer, streamed (gzip, zstd or plain tar); layers go bottom to top.
  void add_layer(const std::function<std::size_t(char*, std::size_t)>& read, const std::string& digest);
  // Applies one member of the current layer (add_layer calls it; tests call it directly
  // after begin_layer). `content` is the file's data when wants_content(path).
  void begin_layer(const std::string& digest);
  void add_member(const TarMember& m, const std::string* content = nullptr);
  // Computes the facts from what the layers left and the config's environment
  // ("NAME=value"). The view stays open: more layers may follow, then finish again.
  void finish(const std::vector<std::string>& config_env);
  static bool wants_content(const std::string& path);

  const ViewNode* find(const std::string& path) const;
  const std::map<std::string, ViewNode>& nodes() const { return m_nodes; }
  const BaseFacts& facts() const { return m_facts; }
  const std::vector<std::string>& layers() const { return m_layers; }
  // The small files kept for the facts and the package inventory (wants_content), by path.
  const std::map<std::string, std::string>& contents() const { return m_content; }
  // The digest of the layer that wrote `path` last; "" for a path the view lacks.
  std::string layer_of(const std::string& path) const;
  // The dpkg packages of the tree, each with the layer that wrote it last (what an SBOM
  // lists beside python::installed_distributions).
  Inventory inventory() const;

  // `path` ("a/b/c", no leading '/') with every directory component resolved through
  // the view's symlinks as a container's open() would (absolute targets from the image
  // root, relative ones from the link's directory, chains, ".."), and the last
  // component too when follow_last. The links followed are appended to `followed`.
  // Throws Error(input) naming `what` and the link when a link leads outside the root
  // or links loop (more than 40).
  std::string resolve(const std::string& path, bool follow_last, std::vector<std::string>* followed,
                      const std::string& what) const;

  // {"format", "layers", "facts"}: everything but the paths; `extra_facts` joins the facts
  // (inspect adds the Python distributions, which python/ reads from the view).
  nlohmann::json header_json(const nlohmann::json& extra_facts = nlohmann::json::object()) const;
  // The whole view as one JSON document, the paths streamed one by one (no document
  // tree of 200,000 paths in memory): `extra`'s fields, header_json's, then "nodes":
  // {PATH: {"t" type, "m" mode, "o" {uid, gid, uname, gname}, "l" layer, "s" size, "k"
  // target, "x" {xattr: base64}}}.
  void write_json(std::ostream& out, const nlohmann::json& extra = nlohmann::json::object(),
                  const nlohmann::json& extra_facts = nlohmann::json::object()) const;
  // Hard links to files the view keeps (a METADATA, dpkg's status) whose target's
  // content it did not keep (the target's own path is not one it wants): target path ->
  // the index of the layer that wrote it (0 = the bottom layer). cached_view reads those
  // targets again and gives them to fill_link_target.
  std::map<std::string, int> missing_link_targets() const;
  void fill_link_target(const std::string& target, const std::string& content);
  // 5: hard links to wanted files carry their target's content (format 4 lost it).
  // 6: embedded SPDX documents (var/lib/db/sbom/*.spdx.json) are kept.
  // 7: dpkg's file lists, diversions and stat overrides, etc/passwd and etc/group,
  //    etc/ld.so.conf and etc/ld.so.cache are kept (a debs layer's dpkg rules read them).
  // 8: etc/shadow, etc/gshadow and etc/skel's files are kept (an accounts layer adds
  //    to the databases and copies the skeleton into new homes).
  static constexpr int k_format = 8;
  // The lines compress_view writes, uncompressed; Error(input) for anything else.
  static BaseView from_lines(const std::string& text);

private:
  void remove_below(const std::string& path, bool include_self, int below_layer);
  std::map<std::string, ViewNode> m_nodes;
  std::map<std::string, std::string> m_content;                  // small files kept for the facts until finish()
  std::map<std::string, std::vector<std::string>> m_link_wanted; // target -> hard links that want its content
  void keep_content(const std::string& path, const std::string& content);
  std::vector<std::string> m_layers;
  BaseFacts m_facts;
  int m_layer = -1;
};

// Writes what a layer lands on into its entries: every directory the layer writes that
// is a directory in `view` takes the view's mode, owner and xattrs (only new ones keep
// the rule's), and every entry whose path passes through one of the view's symlinks is
// moved to where the link leads (a directory entry at a symlink to a directory too), so
// the layer never hides a base directory or turns a symlink into a directory. Missing
// parents of moved entries are added. Returns the links followed ("usr/local/cuda ->
// /etc/alternatives/cuda"), for the build's log. Throws Error(input) naming `what` and
// the link for a link that leaves the root or loops, for two entries that land on one
// path, and for a directory that would land on a base file.
std::vector<std::string> apply_base_view(EntrySet& set, const BaseView& view, const std::string& what);

// A reader over a layer blob that hashes what it hands on and at the end checks size
// and digest (Error(integrity) naming `image` and the layer).
std::function<std::size_t(char*, std::size_t)>
verified_layer_reader(std::function<std::size_t(char*, std::size_t)> inner, const oci::Descriptor& layer,
                      const std::string& image);
// The view of `image`'s manifest `m` (layers streamed through verified_layer_reader),
// finished with the config's environment.
BaseView read_base_view(const oci::Image& image, const oci::Manifest& m, const std::vector<std::string>& config_env);

struct ViewCacheOptions {
  std::filesystem::path cache_dir; // views under CACHE/base-view/; empty: no cache
  bool store = false;              // cache the view of all the layers
  std::string what;                // "base NAME", for messages and errors
  std::function<void(const std::string&)> info, debug;
};
// The view of `layers` (bottom to top, each opened by `open` and verified as it streams),
// finished with the config's environment. The view of the longest prefix of `layers`
// that the cache holds (keyed by the layers' digests, so an image built on a cached base
// finds the base's) is read from it and only the layers above it are streamed; a damaged
// or older cache file is read again from the layers. With `store`, the whole view is
// cached (atomically) when any layer was streamed.
// The name cached_view gives the view of all of `layers` in CACHE/base-view/ (KEY.zst):
// a hash of the view's format and the layers' digests, so another machine's cache of
// the same base names it alike (the registry cache's key for it).
std::string view_cache_key(const std::vector<oci::Descriptor>& layers);
std::filesystem::path view_cache_path(const std::filesystem::path& cache_dir,
                                      const std::vector<oci::Descriptor>& layers);
BaseView cached_view(const std::vector<oci::Descriptor>& layers,
                     const std::function<oci::Reader(const oci::Descriptor&)>& open,
                     const std::vector<std::string>& config_env, const ViewCacheOptions& o);

// A layer's directories and symlinks as LayerRecord::tree holds them, and that tree
// applied to a view as its next layer (the layers of a build land on the earlier ones).
nlohmann::json entry_tree(const EntrySet& set);
void add_tree_layer(BaseView& view, const nlohmann::json& tree, const std::string& digest);

// The cache file's bytes: zstd of a header line ({"format", "layers"}), one JSON array
// per path ([path, type, mode, uid, gid, uname, gname, layer, size, target, {xattr:
// base64}]), then one {"c": path, "b": base64} per kept file, read back a line at a time
// (Error(input) for anything else, another format included) and finished with the
// config's environment.
std::string compress_view(const BaseView& view);
BaseView decompress_view(const std::string& bytes, const std::vector<std::string>& config_env);

} // namespace layers
