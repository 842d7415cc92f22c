#pragma once
// The build use case: spec -> base -> layers (cached) -> config/manifest -> outputs.
#include "layers/cache.hpp"
#include "layers/compress.hpp"
#include "oci/reference.hpp"
#include "python/replace.hpp"
#include "python/wheel.hpp"
#include "python/wheel_fetch.hpp"
#include "registry/transfer.hpp"
#include "spec/spec.hpp"

#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace builder {

// What the build tells its caller while it works (the CLI prints it).
struct Events {
  std::function<void(const std::string& line)> info = [](const std::string&) {};
  // Bytes of layer input consumed so far / total, while a layer is being built.
  std::function<void(const std::string& layer, std::int64_t done, std::int64_t total)> progress =
      [](const std::string&, std::int64_t, std::int64_t) {};
  // Debug-level lines: what was ignored and why (a damaged cache record...).
  std::function<void(const std::string& line)> debug = [](const std::string&) {};
};

struct BuildOptions {
  std::filesystem::path cache_dir;
  std::vector<oci::ImageRef> outputs; // empty: oci:out/<name>
  std::vector<std::string> tags;      // --tag: replace the spec's tags
  std::int64_t source_date_epoch = 0; // already resolved (flag > env > spec > default)
  int threads = 1;
  std::optional<oci::Compression> compression; // --compression gzip|zstd|none|gpu-node overrides the spec
  int compression_level = 0;                   // with `compression`: its level (0: the format's default)
  std::string revision;                        // source revision (git commit)
  // When `revision` is empty: the revision still being found (the CLI runs git while the
  // layers build), waited for only when the image's labels are written.
  std::shared_future<std::string> pending_revision;
  std::string revision_now() const {
    return revision.empty() && pending_revision.valid() ? pending_revision.get() : revision;
  }
  std::vector<std::string> matrix_files;              // --matrix: extra compatibility data
  std::string source;                                 // overrides image.source
  std::function<double()> clock = [] { return 0.0; }; // seconds, for timings only
  // Registry access for registry bases and registry outputs (pushes); null refuses them.
  std::function<std::shared_ptr<registry::Registry>(const std::string& host)> connect;
  registry::TransferOptions transfer; // jobs, progress and messages of pulls and pushes
  // Called once the image is assembled (after local outputs, before pushes) with its
  // local view: every blob a local file (a registry base's layers pulled once into the
  // layer cache when opened). A signed build reads the image for its SBOM here.
  std::function<void(const oci::Image& image, const struct BuildReport& report)> on_image;
  // Wheels layers with a lock and no dir: the package indexes' defaults and transport.
  python::IndexAccess index;
  // The registry cache (--cache-from/--cache-to; builder/registry_cache), looked at on a
  // local miss of a layer or the base's view; null: none.
  std::shared_ptr<layers::RemoteCache> remote_cache;
  // Set for a build that verifies registry cache entries or signs its image: a local
  // copy of an unverified registry entry is not used, the layer is built again.
  bool only_verified_cache = false;
};

struct LayerReport {
  std::string name;
  std::string kind; // base | wheels | files | data
  layers::BlobInfo blob;
  bool rebuilt = false;
  double seconds = 0;
  std::size_t entries = 0;
  // A layer the spec splits (`split`): this is part `part` (from 1) of `parts`.
  std::size_t part = 1;
  std::size_t parts = 1;
  // A wheels layer: what it did to the distributions installed below it.
  std::vector<python::Replacement> replacements;
  // Reused from a registry cache (--cache-from): the repository, and whether the entry
  // was signed by the --cache-verify-key (else the image holds a layer whose bytes only
  // the cache's writers vouch for).
  // (Also for a local copy of such an entry, taken by an earlier build.)
  std::string cache_repository;
  bool cache_verified = false;
  // Where a reused layer came from: "local" (this machine's layer cache), "registry"
  // (a registry cache entry, this build); "" when built.
  std::string cache_origin;
};

// A wheel installed by one of the build's wheels layers.
struct LayerWheel {
  std::string layer; // the spec layer's name
  python::InstalledWheel wheel;
};

struct BuildReport {
  oci::Descriptor manifest;
  oci::Digest config_digest;
  std::string base_name;
  std::optional<oci::Digest> base_digest;
  std::vector<LayerReport> layers;
  std::vector<LayerWheel> wheels;   // in layer order, then install order
  nlohmann::json resolution;        // base: auto: the resolver's report (null otherwise)
  std::vector<std::string> outputs; // as written, with the tags they got
  std::vector<std::string> pushed;  // registry references written, "host/repo:tag@digest"
  std::string revision;
  std::int64_t source_date_epoch = 0;
  double seconds = 0;
  nlohmann::json to_json() const;
};

// Default SOURCE_DATE_EPOCH when nothing sets one: 1980-01-01T00:00:00Z (the
// earliest time ZIP/wheel tooling accepts; never the wall clock).
inline constexpr std::int64_t k_default_epoch = 315532800;

BuildReport build(const spec::BuildSpec& s, const BuildOptions& options, const Events& events);

// `paddle-image lock`: the hashes of the wheels the named wheels layer (the only one
// when "") would install from `requirements`, for the spec's base and Python. The
// index flags in `lock_options` override the layer's index/find_links.
python::LockResult lock(const spec::BuildSpec& s, const std::string& layer, const std::filesystem::path& requirements,
                        python::LockOptions lock_options, const BuildOptions& options, const Events& events);

// Tags for one output of a build, -o and --push alike: the output's own tag plus every
// --tag, else image.tags, else "latest" (imageio::destination_tags).
std::vector<std::string> tags_for(const oci::ImageRef& out, const std::vector<std::string>& cli_tags,
                                  const std::vector<std::string>& spec_tags);

} // namespace builder
