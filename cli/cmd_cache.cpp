#include "builder/registry_cache.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "imageio/source.hpp"
#include "layers/cache.hpp"
#include "oci/types.hpp"
#include "util/error.hpp"

#include <memory>

namespace cli {

namespace {

struct CacheArgs {
  std::string cache_dir;
  std::string max_size;
  bool all = false;
  bool json = false;
  std::string repository;        // a registry cache (build --cache-to)
  std::vector<std::string> keep; // prune: images whose layers stay
  bool dry_run = false;
  RegistryFlags flags;
};

nlohmann::json entry_json(const builder::CacheEntry& e) {
  nlohmann::json j = {{"tag", e.tag},
                      {"manifest", e.manifest.str()},
                      {"kind", layers::entry_kind_name(e.kind)},
                      {"key", e.key},
                      {"blob", e.blob.digest.str()},
                      {"size", e.blob.size},
                      {"media_type", e.blob.media_type},
                      {"signed", e.is_signed()},
                      {"versions", e.versions}};
  return j;
}

nlohmann::json entries_json(const std::vector<builder::CacheEntry>& entries) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : entries) {
    out.push_back(entry_json(e));
  }
  return out;
}

nlohmann::json damaged_json(const std::vector<std::pair<std::string, std::string>>& damaged) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [tag, why] : damaged) {
    out.push_back({{"tag", tag}, {"error", why}});
  }
  return out;
}

std::string entry_line(const builder::CacheEntry& e) {
  return e.tag.substr(0, 20) + "  " + (e.kind == layers::CacheEntryKind::base_view ? "view " : "layer") + "  " +
         e.blob.digest.str() + "  " + human_size(e.blob.size) + (e.is_signed() ? "  signed" : "") + "\n";
}

// `cache ls REPO`: the registry cache's entries.
int run_cache_ls(const CacheArgs& a, const Output& out) {
  oci::ImageRef repo = builder::parse_cache_repository(a.repository, "cache ls");
  RegistrySession sess(a.flags, out, repo.registry);
  builder::CacheListing l = builder::list_cache(*sess.connect(repo.registry), repo.repository);
  std::string text;
  std::int64_t total = 0;
  for (const auto& e : l.entries) {
    text += entry_line(e);
    total += e.blob.size;
  }
  for (const auto& [tag, why] : l.damaged) {
    text += tag.substr(0, 20) + "  damaged: " + why + "\n";
  }
  text += std::to_string(l.entries.size()) + " entries, " + human_size(total) + "\n";
  out.result({{"repository", repo.name()}, {"entries", entries_json(l.entries)}, {"damaged", damaged_json(l.damaged)}},
             text);
  return 0;
}

// The layers of each --keep image, bottom first (every platform of an index).
std::vector<std::vector<oci::Digest>> kept_layers(const std::vector<std::string>& refs, RegistrySession& sess) {
  std::vector<std::vector<oci::Digest>> out;
  auto connect = [&sess](const std::string& host) { return sess.connect(host); };
  for (const auto& text : refs) {
    oci::ImagePtr img = imageio::open_source(oci::ImageRef::parse(text), connect);
    std::vector<oci::ManifestBlob> manifests{img->root()};
    if (img->root().is_index()) {
      manifests.clear();
      for (const auto& d : oci::index_children(img->root(), img->name())) {
        manifests.push_back(img->manifest(d));
      }
    }
    for (const auto& m : manifests) {
      std::vector<oci::Digest> layers;
      for (const auto& d : oci::manifest_from_json(oci::parse_json(m.bytes, text)).layers) {
        layers.push_back(d.digest);
      }
      out.push_back(layers);
    }
  }
  return out;
}

// `cache prune REPO --keep IMAGE...`: deletes the entries none of the images uses.
int run_registry_prune(const CacheArgs& a, const Output& out) {
  oci::ImageRef repo = builder::parse_cache_repository(a.repository, "cache prune");
  if (a.keep.empty()) {
    throw util::Error(util::ErrorKind::usage, "cache prune " + a.repository + " needs --keep IMAGE (repeatable)",
                      "name the images whose layers stay, e.g. --keep " + repo.registry + "/team/app:main");
  }
  RegistrySession sess(a.flags, out, repo.registry);
  auto keep = kept_layers(a.keep, sess);
  builder::CachePrune r = builder::prune_cache(*sess.connect(repo.registry), repo.repository, keep, a.dry_run);
  std::string text;
  for (const auto& e : r.deleted) {
    text += (a.dry_run ? "would delete " : "deleted ") + entry_line(e);
  }
  text += std::to_string(r.kept.size()) + " entries kept, " + std::to_string(r.deleted.size()) +
          (a.dry_run ? " would be deleted" : " deleted") + " (blobs go at the registry's next garbage collection)\n";
  out.result({{"repository", repo.name()},
              {"dry_run", a.dry_run},
              {"kept", entries_json(r.kept)},
              {"deleted", entries_json(r.deleted)},
              {"damaged", damaged_json(r.damaged)}},
             text);
  return 0;
}

// `cache prune` of the local cache.
int run_local_prune(const CacheArgs& a, const Output& out) {
  layers::LayerCache cache(a.cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a.cache_dir));
  if (a.max_size.empty() && !a.all) {
    throw util::Error(util::ErrorKind::usage, "cache prune needs --max-size SIZE or --all (or a registry cache: "
                                              "cache prune REPO --keep IMAGE)");
  }
  std::int64_t limit = a.all ? 0 : parse_size(a.max_size, "--max-size");
  auto r = cache.prune(limit);
  nlohmann::json j = {{"cache_dir", cache.dir().string()}, {"bytes_before", r.bytes_before},
                      {"bytes_after", r.bytes_after},      {"layers_removed", r.layers_removed},
                      {"blobs_removed", r.blobs_removed},  {"views_removed", r.views_removed}};
  out.result(j, "pruned " + cache.dir().string() + ": " + human_size(r.bytes_before) + " -> " +
                    human_size(r.bytes_after) + " (" + std::to_string(r.layers_removed) + " layer entries, " +
                    std::to_string(r.blobs_removed) + " blobs" +
                    (a.all ? ", " + std::to_string(r.views_removed) + " base views" : std::string()) + " removed)\n");
  return 0;
}

} // namespace

Action add_cache(CLI::App& app) {
  auto a = std::make_shared<CacheArgs>();
  CLI::App* c = app.add_subcommand("cache", "Manage the layer cache");
  c->require_subcommand(1);
  CLI::App* prune = c->add_subcommand("prune", "Drop least recently used layers until the cache fits a size");
  CLI::App* info = c->add_subcommand("info", "Show the cache's location and size");
  for (CLI::App* sub : {prune, info}) {
    sub->add_option("--cache-dir", a->cache_dir,
                    "Layer cache directory (default $PADDLE_IMAGE_CACHE or ~/.cache/paddle-image)");
    sub->add_flag("--json", a->json, "JSON output");
  }
  auto* max = prune->add_option("--max-size", a->max_size, "Keep at most this much (e.g. 20G)");
  auto* all = prune->add_flag("--all", a->all, "Remove every cached layer");
  max->excludes(all);
  prune->add_option("repository", a->repository,
                    "A registry cache (build --cache-to) to prune instead: entries no --keep image uses are deleted");
  prune->add_option("--keep", a->keep, "With a registry cache: an image whose layers' entries stay (repeatable)");
  prune->add_flag("--dry-run", a->dry_run, "With a registry cache: list what would be deleted, delete nothing");
  CLI::App* ls = c->add_subcommand("ls", "List the entries of a registry cache (build --cache-to REPO)");
  ls->add_option("repository", a->repository, "The registry cache repository, HOST/PATH")->required();
  ls->add_flag("--json", a->json, "JSON output");
  a->flags.add(ls, false, false);
  a->flags.add(prune, false, false);
  return [a, prune, ls] {
    Output out = Output::detect(a->json, false);
    if (ls->parsed()) {
      return run_cache_ls(*a, out);
    }
    if (prune->parsed()) {
      return a->repository.empty() ? run_local_prune(*a, out) : run_registry_prune(*a, out);
    }
    layers::LayerCache cache(a->cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a->cache_dir));
    std::int64_t size = cache.size_bytes();
    out.result({{"cache_dir", cache.dir().string()}, {"bytes", size}},
               cache.dir().string() + ": " + human_size(size) + "\n");
    return 0;
  };
}

} // namespace cli
