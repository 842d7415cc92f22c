#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "layers/cache.hpp"
#include "util/error.hpp"

#include <memory>

namespace cli {

namespace {

struct CacheArgs {
  std::string cache_dir;
  std::string max_size;
  bool all = false;
  bool json = false;
};

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
  return [a, prune] {
    Output out = Output::detect(a->json, false);
    layers::LayerCache cache(a->cache_dir.empty() ? default_cache_dir() : std::filesystem::path(a->cache_dir));
    if (prune->parsed()) {
      if (a->max_size.empty() && !a->all) {
        throw util::Error(util::ErrorKind::usage, "cache prune needs --max-size SIZE or --all");
      }
      std::int64_t limit = a->all ? 0 : parse_size(a->max_size, "--max-size");
      auto r = cache.prune(limit);
      nlohmann::json j = {{"cache_dir", cache.dir().string()}, {"bytes_before", r.bytes_before},
                          {"bytes_after", r.bytes_after},      {"layers_removed", r.layers_removed},
                          {"blobs_removed", r.blobs_removed},  {"views_removed", r.views_removed}};
      out.result(j, "pruned " + cache.dir().string() + ": " + human_size(r.bytes_before) + " -> " +
                        human_size(r.bytes_after) + " (" + std::to_string(r.layers_removed) + " layer entries, " +
                        std::to_string(r.blobs_removed) + " blobs" +
                        (a->all ? ", " + std::to_string(r.views_removed) + " base views" : std::string()) +
                        " removed)\n");
      return 0;
    }
    std::int64_t size = cache.size_bytes();
    out.result({{"cache_dir", cache.dir().string()}, {"bytes", size}},
               cache.dir().string() + ": " + human_size(size) + "\n");
    return 0;
  };
}

} // namespace cli
