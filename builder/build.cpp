#include "builder/build.hpp"
#include "builder/remote_sources.hpp"

#include "builder/base.hpp"
#include "builder/built_image.hpp"
#include "builder/layer_build.hpp"
#include "builder/layer_kind.hpp"
#include "builder/supply_chain.hpp"
#include "compat_matrix/facts.hpp"
#include "imageio/destination.hpp"
#include "layers/cache.hpp"
#include "layers/tar.hpp"
#include "layers/tree.hpp"
#include "layers/walk_memo.hpp"
#include "python/replace.hpp"
#include "python/requirements.hpp"
#include "python/wheel.hpp"
#include "spec/env_value.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <algorithm>
#include <charconv>
#include <set>
#include <tuple>

namespace builder {

using nlohmann::json;
using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

// The layer cache (open and in use), the base and the image's two views.
struct BuildResult::State {
  std::unique_ptr<layers::LayerCache> cache;
  std::unique_ptr<util::FileLock> cache_use;
  fs::path cache_dir;
  DebugLog debug;
  Base base;
  std::optional<BuiltImage> local, remote;
};

namespace {

layers::CompressOptions compression_for(const spec::BuildSpec& s, const spec::LayerSpec& l, const BuildOptions& o) {
  spec::CompressionSpec cs = l.compression.value_or(s.compression);
  if (o.compression) {
    cs = spec::CompressionSpec{*o.compression, true,
                               o.compression_level > 0 ? o.compression_level : oci::default_level(*o.compression)};
  }
  layers::CompressOptions co;
  co.threads = std::max(1, o.threads);
  co.kind = cs.format;
  co.level = cs.level;
  return co;
}

// The layer's reports: one, or one per part of a split layer.
std::vector<LayerReport> build_layer(const spec::BuildSpec& s, const spec::LayerSpec& l, const BuildOptions& o,
                                     layers::LayerCache& cache, const Base& base, const layers::BaseView& landing,
                                     const std::optional<python::PythonTarget>& py, const Events& ev,
                                     std::vector<LayerWheel>& wheels_out, nlohmann::json& tree) {
  LayerReport r;
  r.name = l.name;
  r.kind = spec::kind_name(l.kind);
  double t0 = o.clock();
  LayerContext cx{o, cache, ev, compression_for(s, l, o), base, landing, tree, py ? &*py : nullptr, wheels_out};
  cx.architecture = s.platform.architecture;
  cx.platform = s.platform;
  std::vector<LayerReport> out = layer_kind(l.kind).build(l, cx, r);
  if (out.size() == 1) {
    out[0].seconds = o.clock() - t0; // a layer in parts times each part itself
  }
  return out;
}

// The image being assembled: the config and the layer descriptors, base layers first.
struct Assembly {
  oci::ImageConfig config;
  std::vector<oci::Descriptor> layers;
  std::string created; // RFC 3339 of SOURCE_DATE_EPOCH
};

Assembly start_from_base(const spec::BuildSpec& s, const Base& base, std::int64_t epoch) {
  Assembly a;
  a.config = base.config;
  if (a.config.os.empty()) {
    a.config.os = s.platform.os;
    a.config.architecture = s.platform.architecture;
  }
  for (const auto& d : base.manifest.layers) {
    a.layers.push_back(oci::Descriptor{d.media_type, d.digest, d.size, {}, {}});
  }
  a.created = util::rfc3339_utc(epoch);
  return a;
}

void append_layer(Assembly& a, const LayerReport& lr) {
  a.layers.push_back(oci::Descriptor{lr.blob.media_type, lr.blob.digest, lr.blob.size, {}, {}});
  a.config.diff_ids.push_back(lr.blob.diff_id);
  std::string comment = std::to_string(lr.entries) + " entries";
  if (lr.parts > 1) {
    comment += ", part " + std::to_string(lr.part) + " of " + std::to_string(lr.parts);
  }
  a.config.history.push_back(
      oci::HistoryEntry{a.created, "paddle-image build: " + lr.kind + " layer '" + lr.name + "'", comment, false});
}

// Builds or reuses each spec layer, in order.
void build_spec_layers(const spec::BuildSpec& s, const BuildOptions& o, layers::LayerCache& cache, const Base& base,
                       const std::optional<python::PythonTarget>& py, const Events& ev, Assembly& a, BuildReport& rep) {
  // Each layer lands on the base and on the layers before it: their directories and
  // links are added to a copy of the base's view as the build goes.
  static const layers::BaseView k_empty;
  const layers::BaseView* landing = base.view ? base.view.get() : &k_empty;
  std::optional<layers::BaseView> with_earlier;
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    const auto& l = s.layers[i];
    ev.info("[" + std::to_string(i + 1) + "/" + std::to_string(s.layers.size()) + "] layer '" + l.name + "'");
    nlohmann::json tree = nlohmann::json::array();
    std::vector<LayerReport> parts = build_layer(s, l, o, cache, base, *landing, py, ev, rep.wheels, tree);
    if (i + 1 < s.layers.size() && !tree.empty()) {
      if (!with_earlier) {
        with_earlier = *landing;
      }
      layers::add_tree_layer(*with_earlier, tree, parts.back().blob.digest.str());
      landing = &*with_earlier;
    }
    for (auto& lr : parts) {
      ev.info("  " + std::string(lr.rebuilt ? "built " : "reused ") + lr.blob.digest.str() + " (" +
              std::to_string(lr.blob.size) + " bytes, " + std::to_string(lr.entries) + " entries" +
              (lr.parts > 1 ? ", part " + std::to_string(lr.part) + " of " + std::to_string(lr.parts) : "") + ")");
      append_layer(a, lr);
      rep.layers.push_back(std::move(lr));
    }
  }
}

// The spec's env over the base's, in the spec's order, each value's references expanded
// against what is set before it (the base's variables, then the spec's entries above),
// as Docker expands an ENV: the image records the result, and a new base expands again.
// A base without PATH reads as Docker's default Linux PATH, which BuildKit and buildah
// give such an image at FROM.
void merge_env(const spec::BuildSpec& s, oci::ImageConfig& cfg, const Events& ev) {
  auto lookup = [&](const std::string& n) -> std::optional<std::string> {
    std::optional<std::string> v = cfg.get_env(n);
    if (!v && n == "PATH") {
      return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    }
    return v;
  };
  for (const auto& [k, v] : s.config.env) {
    std::vector<std::string> unset;
    std::string value = spec::EnvValue::parse(v).expand(lookup, &unset);
    for (const auto& n : unset) {
      ev.info("  warning: " + s.file.filename().string() + ": config.env." + k + " refers to $" + n +
              ", which neither the base nor an entry above sets: it expands to \"\" (as Docker's ENV does)");
    }
    cfg.set_env(k, value);
  }
}

// The spec's runtime settings over the base's.
void merge_runtime_config(const spec::BuildSpec& s, oci::ImageConfig& cfg, const Events& ev) {
  const spec::ConfigSpec& c = s.config;
  auto& rc = cfg.config;
  merge_env(s, cfg, ev);
  if (c.entrypoint) {
    rc.entrypoint = c.entrypoint;
    if (!c.cmd) {
      rc.cmd.reset(); // as Docker does: a new ENTRYPOINT clears the base's CMD
    }
  }
  if (c.cmd) {
    rc.cmd = c.cmd;
  }
  if (!c.workdir.empty()) {
    rc.working_dir = c.workdir;
  }
  if (!c.user.empty()) {
    rc.user = c.user;
  }
  if (!c.stop_signal.empty()) {
    rc.stop_signal = c.stop_signal;
  }
  for (const auto& p : c.ports) {
    if (std::find(rc.exposed_ports.begin(), rc.exposed_ports.end(), p) == rc.exposed_ports.end()) {
      rc.exposed_ports.push_back(p);
    }
  }
  std::sort(rc.exposed_ports.begin(), rc.exposed_ports.end());
}

// The org.opencontainers.image.* keys of this image: manifest annotations and labels.
oci::Annotations oci_keys_for(const spec::BuildSpec& s, const BuildOptions& o, const Base& base,
                              const std::string& created) {
  oci::Annotations keys;
  keys["org.opencontainers.image.created"] = created;
  std::string source = o.source.empty() ? s.source : o.source;
  if (!source.empty()) {
    keys["org.opencontainers.image.source"] = source;
  }
  if (std::string revision = o.revision_now(); !revision.empty()) {
    keys["org.opencontainers.image.revision"] = revision;
  }
  if (!s.version.empty()) {
    keys["org.opencontainers.image.version"] = s.version;
  }
  if (!s.name.empty()) {
    keys["org.opencontainers.image.title"] = s.name;
  }
  if (base.digest) {
    keys["org.opencontainers.image.base.name"] = base.name;
    keys["org.opencontainers.image.base.digest"] = base.digest->str();
  }
  return keys;
}

// The spec's requires: over the facts, and the Python of the wheels' target.
void apply_requires(const spec::BuildSpec& s, const std::optional<python::PythonTarget>& py, compat::ImageFacts& f) {
  auto over = [](std::string& field, const std::string& v) {
    if (!v.empty()) {
      field = v;
    }
  };
  const auto& req = s.requires_;
  over(f.cuda, req.cuda);
  over(f.cudnn, req.cudnn);
  over(f.paddle, req.paddle);
  over(f.driver_min, req.driver_min);
  if (!req.gpu_archs.empty()) {
    f.archs = req.gpu_archs;
  }
  if (req.gpu_memory_mib > 0) {
    f.gpu_memory_mib = req.gpu_memory_mib;
  }
  if (py) {
    f.python = "3." + std::to_string(py->minor);
  }
}

// Each io.paddle-image.* label as its readers parse it (compat::ImageFacts): one the
// spec gives must parse; one inherited from the base that does not is dropped.
void drop_unparsable_labels(const spec::BuildSpec& s, const Events& ev, std::map<std::string, std::string>& labels) {
  for (auto it = labels.begin(); it != labels.end();) {
    if (it->first.rfind(compat::k_label_prefix, 0) != 0) {
      ++it;
      continue;
    }
    try {
      compat::ImageFacts::from_labels({{it->first, it->second}}, "the built image");
      ++it;
    } catch (const Error& e) {
      if (s.config.labels.count(it->first) != 0) {
        throw Error(ErrorKind::input, s.file.filename().string() + ": config.labels: " + e.what(), e.hint());
      }
      ev.info("  warning: the base's label " + it->first + "=" + shown_value(it->second) +
              " does not parse (docs/labels.md): not inherited");
      it = labels.erase(it);
    }
  }
}

// Labels (docs/labels.md): the base's own OCI keys (source, revision, version,
// title...) describe the base, not this image, and are dropped; io.paddle-image.*
// requirements are inherited. Then the spec's labels, this image's OCI keys, and the
// requirement labels: the facts of a base chosen by `base: auto` first, the spec's
// requires: over them, as one compat::ImageFacts (the type doctor --image and render
// read back).
void set_labels(const spec::BuildSpec& s, const Base& base, const std::map<std::string, BaseFact>& facts,
                const std::optional<python::PythonTarget>& py, const oci::Annotations& oci_keys, const Events& ev,
                std::map<std::string, std::string>& labels) {
  for (auto it = labels.begin(); it != labels.end();) {
    it = it->first.rfind("org.opencontainers.image.", 0) == 0 ? labels.erase(it) : std::next(it);
  }
  for (const auto& [k, v] : s.config.labels) {
    labels[k] = v;
  }
  for (const auto& [k, v] : oci_keys) {
    labels[k] = v;
  }
  BaseCompatFacts from_base = base_compat_facts(base, facts, ev);
  compat::ImageFacts f = from_base.facts;
  const bool compat_known = from_base.cuda_known;
  apply_requires(s, py, f);
  for (const auto& [k, v] : f.labels()) {
    labels[k] = v;
  }
  if (compat_known && f.driver_min_compat.empty()) {
    labels.erase("io.paddle-image.driver.min-compat"); // that CUDA has none (an inherited one would be wrong)
  }
  drop_unparsable_labels(s, ev, labels);
}

// Config and manifest, serialised canonically, and their descriptors.
struct ImageDocuments {
  std::string config_bytes;
  oci::Descriptor config;
  std::string manifest_bytes;
  oci::Descriptor manifest;
};

ImageDocuments serialise(const Assembly& a, const oci::Annotations& annotations) {
  ImageDocuments d;
  d.config_bytes = oci::canonical(oci::to_json(a.config));
  d.config = oci::Descriptor{oci::media::k_config,
                             oci::Digest::sha256(util::sha256_hex(d.config_bytes)),
                             static_cast<std::int64_t>(d.config_bytes.size()),
                             {},
                             {}};
  oci::Manifest manifest;
  manifest.config = d.config;
  manifest.layers = a.layers;
  manifest.annotations = annotations;
  d.manifest_bytes = oci::canonical(oci::to_json(manifest));
  d.manifest = oci::Descriptor{oci::media::k_manifest,
                               oci::Digest::sha256(util::sha256_hex(d.manifest_bytes)),
                               static_cast<std::int64_t>(d.manifest_bytes.size()),
                               {},
                               oci::Platform{a.config.architecture, a.config.os, a.config.variant}};
  return d;
}

// The layers as the writers see them: ours from the cache, base layers from the base.
std::vector<BuiltLayer> built_layers(const Assembly& a, const Base& base, const BuildReport& rep,
                                     layers::LayerCache& cache) {
  std::vector<BuiltLayer> built;
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    BuiltLayer bl;
    bl.descriptor = a.layers[i];
    bl.from_base = i < base.manifest.layers.size();
    if (!bl.from_base) {
      bl.file = cache.blobs().blob_path(a.layers[i].digest);
      bl.uncompressed_size = rep.layers[i].blob.uncompressed_size;
      if (auto hit = cache.remote_origin(a.layers[i].digest)) {
        bl.cache = &cache;
        bl.mount_registry = hit->registry;
        bl.mount_repository = hit->repository;
      } else if (auto home = cache.remote() ? cache.remote()->stored_at(a.layers[i].digest) : std::nullopt) {
        bl.mount_registry = home->first;
        bl.mount_repository = home->second;
      }
    }
    built.push_back(bl);
  }
  return built;
}

// The built image's two views (BuildResult), over the cache's blobs and the base.
void assemble_views(const spec::BuildSpec& s, const Assembly& a, const ImageDocuments& docs, const BuildReport& rep,
                    BuildResult::State& st) {
  layers::LayerCache& cache = *st.cache;
  oci::Descriptor cfg_blob = cache.blobs().put_bytes(oci::media::k_config, docs.config_bytes);
  std::vector<BuiltLayer> built = built_layers(a, st.base, rep, cache);
  std::string image_name = s.name.empty() ? std::string("the built image") : s.name;
  oci::ManifestBlob root{oci::media::k_manifest, docs.manifest_bytes, docs.manifest.digest};
  fs::path cfg_file = cache.blobs().blob_path(cfg_blob.digest);
  st.local.emplace(image_name, root, cfg_blob, cfg_file, built, st.base, BuiltImage::BaseBlobs::local);
  st.remote.emplace(image_name, root, cfg_blob, cfg_file, built, st.base, BuiltImage::BaseBlobs::remote);
}

} // namespace

std::vector<std::string> fallback_tags(const spec::BuildSpec& s) {
  return s.tags.empty() ? std::vector<std::string>{"latest"} : s.tags;
}

oci::ImageRef default_output(const spec::BuildSpec& s) {
  std::string leaf = s.name.empty() ? "image" : s.name.substr(s.name.rfind('/') + 1);
  leaf = leaf.substr(0, leaf.find(':'));
  return oci::ImageRef::parse("oci:out/" + leaf);
}

void record_published(BuildReport& rep, const std::vector<imageio::Published>& published) {
  for (const auto& p : published) {
    switch (p.destination.kind) {
    case oci::ImageRef::Kind::oci_layout:
    case oci::ImageRef::Kind::oci_archive:
      for (const auto& r : p.tagged()) {
        rep.outputs.push_back(r.str());
      }
      break;
    case oci::ImageRef::Kind::registry:
      for (const auto& r : p.tagged()) {
        rep.pushed.push_back(r.name() + (r.tag.empty() ? "" : ":" + r.tag) + "@" + p.digest.str());
      }
      break;
    case oci::ImageRef::Kind::docker_archive:
      rep.outputs.push_back(p.destination.str());
      break;
    }
  }
}

BuildResult::BuildResult(std::shared_ptr<State> state) : m_state(std::move(state)) {}

BuildResult::~BuildResult() {
  try {
    close();
  } catch (...) { // NOLINT(bugprone-empty-catch): the records are a shortcut; the next build hashes again
  }
}

const oci::Image& BuildResult::image() const {
  return *m_state->local;
}

const oci::Image& BuildResult::registry_image() const {
  return *m_state->remote;
}

void BuildResult::close() {
  if (m_state) {
    std::shared_ptr<State> st = std::move(m_state);
    refresh_local_base_records(st->base, st->cache_dir, st->debug);
  }
}

json BuildReport::to_json() const {
  json ls = json::array();
  for (const auto& l : layers) {
    ls.push_back({{"name", l.name},
                  {"kind", l.kind},
                  {"digest", l.blob.digest.str()},
                  {"diff_id", l.blob.diff_id.str()},
                  {"size", l.blob.size},
                  {"media_type", l.blob.media_type},
                  {"status", l.kind == "base" ? "base"
                             : l.rebuilt      ? "rebuilt"
                                              : "reused"},
                  {"seconds", l.seconds},
                  {"entries", l.entries}});
    if (l.parts > 1) {
      ls.back()["part"] = l.part;
      ls.back()["parts"] = l.parts;
    }
    if (!l.cache_repository.empty()) {
      // origin "local": a copy an earlier build took from that registry entry
      ls.back()["cache"] = {
          {"repository", l.cache_repository}, {"verified", l.cache_verified}, {"origin", l.cache_origin}};
    }
    if (l.kind == "wheels") {
      json reps = json::array();
      for (const auto& r : l.replacements) {
        reps.push_back(python::to_json(r));
      }
      ls.back()["replacements"] = reps;
    }
    if (!l.debs.is_null()) {
      ls.back()["packages"] = l.debs;
    }
    if (!l.sources.is_null()) {
      ls.back()["sources"] = l.sources;
    }
  }
  json ws = json::array();
  for (const auto& w : wheels) {
    json item = python::to_json(w.wheel);
    item["layer"] = w.layer;
    ws.push_back(item);
  }
  return {
      {"digest", manifest.digest.str()},
      {"manifest", {{"digest", manifest.digest.str()}, {"size", manifest.size}, {"media_type", manifest.media_type}}},
      {"config_digest", config_digest.str()},
      {"base", {{"name", base_name}, {"digest", base_digest ? base_digest->str() : ""}}},
      {"layers", ls},
      {"wheels", ws},
      {"resolution", resolution},
      {"outputs", outputs},
      {"pushed", pushed},
      {"revision", revision},
      {"source_date_epoch", source_date_epoch},
      {"seconds", seconds}};
}

python::LockResult lock(const spec::BuildSpec& s, const std::string& layer_name, const fs::path& requirements,
                        python::LockOptions lo, const BuildOptions& o, const Events& ev) {
  const spec::LayerSpec* layer = nullptr;
  std::vector<std::string> names;
  for (const auto& l : s.layers) {
    if (l.kind == spec::LayerSpec::Kind::wheels && !l.wheels().uninstalls()) { // one that uninstalls has no lock
      names.push_back(l.name);
      if (l.name == layer_name || (layer_name.empty() && !layer)) {
        layer = &l;
      }
    }
  }
  if (names.empty()) {
    throw Error(ErrorKind::usage, s.file.string() + " has no wheels layer to lock for",
                "add a wheels layer with lock: FILE to the spec");
  }
  if (!layer || (layer_name.empty() && names.size() > 1)) {
    throw Error(ErrorKind::usage,
                layer_name.empty()
                    ? "--layer: " + s.file.string() + " has several wheels layers (" + util::join(names, ", ") + ")"
                    : "--layer " + layer_name + ": " + s.file.string() + " has no wheels layer of that name",
                "name one of them: --layer " + (layer_name.empty() ? names.front() : util::closest(layer_name, names)));
  }
  if (lo.indexes.empty()) {
    lo.indexes = layer->wheels().indexes;
  } else {
    lo.indexes_from = "-i/--index-url";
  }
  if (lo.find_links.empty()) {
    lo.find_links = layer->wheels().find_links;
  }
  layers::LayerCache cache(o.cache_dir, ev.debug);
  auto cache_use = cache.use();
  Base base = open_build_base(s, o, cache, ev);
  python::PythonTarget t = python_target(s, base);
  warn_if_no_dpkg_python(base, t, ev);
  python::TargetFacts facts = base_target_facts(base, t);
  ev.info("locking " + requirements.string() + " for layer '" + layer->name +
          "': " + (lo.all_platforms ? "every platform" : t.describe()));
  return python::write_lock(requirements, facts, lo, o.index, cache, std::max(1, o.threads), ev.info);
}

BuildResult build(const spec::BuildSpec& s, const BuildOptions& o, const Events& ev) {
  check_sources_pinned(s); // before any work: a build fetches nothing it cannot check
  double t0 = o.clock();
  BuildReport rep;
  rep.source_date_epoch = o.source_date_epoch;
  auto st = std::make_shared<BuildResult::State>();
  st->cache = std::make_unique<layers::LayerCache>(o.cache_dir, ev.debug);
  st->cache_use = st->cache->use();
  st->cache_dir = o.cache_dir;
  st->debug = ev.debug;
  layers::LayerCache& cache = *st->cache;
  cache.set_remote(o.remote_cache.get());
  cache.set_only_verified(o.only_verified_cache, ev.info);
  cache.set_download_hits(o.local_image);
  // The registry cache's stores read the cache's blobs: written before the cache goes, on
  // every way out (the layers built before an error are worth a cache entry; an
  // interruption stops them).
  struct FlushOnExit {
    layers::RemoteCache* remote;
    ~FlushOnExit() {
      try {
        if (remote != nullptr) {
          remote->flush();
        }
      } catch (...) { // NOLINT(bugprone-empty-catch): already leaving with the build's own error
      }
    }
  } flush_on_exit{o.remote_cache.get()};

  st->base = open_build_base(s, o, cache, ev);
  const Base& base = st->base;
  report_base(base, rep, ev);
  const std::map<std::string, BaseFact> facts = base_facts(base, ev);
  check_requires_against_base(s, facts);
  std::optional<python::PythonTarget> py = wheels_target(s, base);
  Assembly a = start_from_base(s, base, o.source_date_epoch);
  build_spec_layers(s, o, cache, base, py, ev, a, rep);

  a.config.created = a.created;
  merge_runtime_config(s, a.config, ev);
  rep.revision = o.revision_now();
  oci::Annotations oci_keys = oci_keys_for(s, o, base, a.created);
  set_labels(s, base, facts, py, oci_keys, ev, a.config.config.labels);
  ImageDocuments docs = serialise(a, oci_keys);
  rep.manifest = docs.manifest;
  rep.config_digest = docs.config.digest;

  if (o.remote_cache) {
    o.remote_cache->flush(); // the cache entries first: a push then mounts their blobs
  }
  assemble_views(s, a, docs, rep, *st);
  rep.seconds = o.clock() - t0;
  BuildResult result(std::move(st));
  result.report = std::move(rep);
  return result;
}

} // namespace builder
