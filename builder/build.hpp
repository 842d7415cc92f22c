#pragma once
// The build use case: spec -> base -> layers (cached) -> config/manifest -> an image.
// It writes no output: the caller publishes the image it returns (imageio::publish).
#include "imageio/publish.hpp"
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
  // Registry access for registry bases; null refuses them.
  std::function<std::shared_ptr<registry::Registry>(const std::string& host)> connect;
  registry::TransferOptions transfer; // progress of a registry base's pulls
  // The caller reads every layer of the image locally (a layout or an archive is
  // written, or a signed build's SBOM scans it): a layer found in the registry cache is
  // downloaded (and checked) as it is found, so a damaged one is still built instead.
  // False (only pushes): a registry cache hit stays in the registry and is mounted.
  bool local_image = true;
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
  // A debs layer: the packages it installs, from its lock ([{name, version,
  // architecture, filename, sha256, url}]); null for other kinds.
  nlohmann::json debs;
  // A files or data layer's remote sources (url:), each as fetched: [{url, sha256,
  // size, extract, to, downloaded}]; null for a layer without.
  nlohmann::json sources;
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
  std::vector<LayerWheel> wheels; // in layer order, then install order
  nlohmann::json resolution;      // base: auto: the resolver's report (null otherwise)
  // Filled once the image is published (record_published): the layouts and archives
  // as written ("oci:DIR:TAG" and "oci-archive:FILE:TAG" per tag, "docker-archive:FILE"),
  // the registry references ("host/repo:tag@digest").
  std::vector<std::string> outputs;
  std::vector<std::string> pushed;
  std::string revision;
  std::int64_t source_date_epoch = 0;
  double seconds = 0;
  nlohmann::json to_json() const;
};

// Default SOURCE_DATE_EPOCH when nothing sets one: 1980-01-01T00:00:00Z (the
// earliest time ZIP/wheel tooling accepts; never the wall clock).
inline constexpr std::int64_t k_default_epoch = 315532800;

// What build returns: its report and the image it assembled. The image reads its own
// layers from the layer cache, which stays open (and in use, so no prune removes them)
// while the result lives, and the base's layers from the base.
class BuildResult {
public:
  struct State;
  explicit BuildResult(std::shared_ptr<State> state);
  BuildResult(BuildResult&&) noexcept = default;
  BuildResult& operator=(BuildResult&&) noexcept = default;
  BuildResult(const BuildResult&) = delete;
  BuildResult& operator=(const BuildResult&) = delete;
  ~BuildResult();

  BuildReport report;
  // For layouts, archives and an SBOM: every blob a local file (a registry base's
  // layers pulled once into the layer cache when first read).
  const oci::Image& image() const;
  // For registries: a registry base's layers stay there (mounted or streamed across,
  // never stored); our layers are mounted from a registry cache that holds them.
  const oci::Image& registry_image() const;
  // Once the image is published: the base's local blob records follow what writing it
  // did to their files (a link into a layout changes a file's ctime), and the layer
  // cache is let go (the image is not read after this). The destructor does it when
  // not called.
  void close();

private:
  std::shared_ptr<State> m_state;
};

BuildResult build(const spec::BuildSpec& s, const BuildOptions& options, const Events& events);

// The report's outputs and pushed references from what publishing wrote.
void record_published(BuildReport& report, const std::vector<imageio::Published>& published);

// Where a build's image goes when no -o or --push names a place: oci:out/<name's leaf>.
oci::ImageRef default_output(const spec::BuildSpec& s);

// `paddle-image lock`: the hashes of the wheels the named wheels layer (the only one
// when "") would install from `requirements`, for the spec's base and Python. The
// index flags in `lock_options` override the layer's index/find_links.
python::LockResult lock(const spec::BuildSpec& s, const std::string& layer, const std::filesystem::path& requirements,
                        python::LockOptions lock_options, const BuildOptions& options, const Events& events);

// The tags a build's image gets where neither the destination nor --tag names one:
// image.tags, else "latest" (imageio::destination_tags).
std::vector<std::string> fallback_tags(const spec::BuildSpec& s);

} // namespace builder
