#pragma once
// What the layer kinds share (builder/kinds/: files and data, wheels): the cache key (a
// hash of every input), the landing on the base's tree, the writer of a layer's tar
// stream, and the context every kind builds in.
#include "builder/base.hpp"
#include "builder/build.hpp"
#include "layers/base_view.hpp"
#include "layers/cache.hpp"
#include "layers/compress.hpp"
#include "layers/tree.hpp"
#include "python/wheel_fetch.hpp"
#include "spec/spec.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace builder {

inline constexpr int k_key_version = 2; // 2: layers land on the base and the earlier layers

// A spec's owner as a layer entry's (root when the spec names none).
layers::Owner to_owner(const std::optional<spec::OwnerSpec>& o);

// Streams a canonical description of the inputs into a hash: the cache key.
class KeyHasher {
public:
  void add(const nlohmann::json& j) {
    std::string s = j.dump();
    m_hash.update(s);
    m_hash.update("\n", 1);
  }
  void raw(const std::string& bytes) { m_hash.update(bytes); }
  std::string finish() { return m_hash.finish_hex(); }

private:
  util::Sha256 m_hash;
};

// One NUL-separated record per entry (hot on no-change rebuilds of big trees, so no
// JSON here); buffered into the hash in 64 KiB pieces.
void add_entries_to_key(KeyHasher& k, const layers::EntrySet& set);

// The portable form of add_entries_to_key, for the registry cache (a key another machine
// finds): each entry's path, type, mode, owner, size, link target and xattrs, and a
// regular file's SHA-256 in place of its source path, device, inode and times (the tar
// never holds those). Files are hashed on `threads` threads.
void add_entry_contents_to_key(KeyHasher& k, const layers::EntrySet& set, int threads);

// The racily clean regular files of `set` (layers::racily_clean against the walk's
// start), each with its SHA-256 (hashed on `threads` threads): what a stat-keyed
// layer's key file must check on a later hit (layers::ContentChecks).
layers::ContentChecks content_checks(const layers::EntrySet& set, std::int64_t walk_start_ns, int threads);

// The start of every layer key: format version, compression and epoch.
void start_layer_key(KeyHasher& key, const layers::CompressOptions& co, const BuildOptions& o);

// Writes the entries as the layer's tar stream, compressed into `tmp`, with progress
// events every 8 MiB.
layers::BlobInfo write_layer(const layers::EntrySet& set, const layers::CompressOptions& co, std::int64_t epoch,
                             util::AtomicFile& tmp, const std::string& name, const Events& ev);

// Everything a layer build needs besides the spec layer itself.
struct LayerContext {
  const BuildOptions& options;
  layers::LayerCache& cache;
  const Events& events;
  layers::CompressOptions compress;
  const Base& base;
  // What the layer lands on: the base's view with the build's earlier layers on top
  // (an empty view on scratch).
  const layers::BaseView& landing;
  // Set to the layer's directories and symlinks (layers::entry_tree), built or reused.
  nlohmann::json& tree_out;
  // The Python the build's wheels are installed for (none without a wheels layer), and
  // where a wheels layer reports the wheels it installed.
  const python::PythonTarget* python = nullptr;
  std::vector<LayerWheel>& wheels_out;
  // The spec's platform's architecture ("amd64", "arm64"): what a debs layer installs for.
  std::string architecture = "amd64";
  // The spec's whole platform: what an image source's manifest is chosen for.
  oci::Platform platform = oci::default_platform();
};

// What a layer's entries land on: the base's directories keep their metadata, and
// destinations through the base's symlinks go where the links lead
// (layers::apply_base_view). The entries, and so the cache key computed from them,
// then depend on exactly the base entries the layer touches. Returns the symlinks of
// the layers below that destinations went through.
std::vector<std::string> land_on_base(layers::EntrySet& set, const LayerContext& cx, const spec::LayerSpec& l);
// Records where get_or_build found the layer (rebuilt, or the registry cache it came from).
void note_found(const LayerContext& cx, layers::Found found, const layers::BlobInfo& blob, LayerReport& r);

// Says each of those symlinks as a build line.
void tell_links(const std::vector<std::string>& links, const Events& ev);

// A files or data layer's copy as the walk takes it, its owner the copy's or else the layer's.
layers::CopyRule copy_rule(const spec::CopySpec& c, const spec::LayerSpec& l);

} // namespace builder
