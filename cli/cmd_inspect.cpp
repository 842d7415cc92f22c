#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "util/error.hpp"

#include <memory>
#include <sstream>

namespace cli {

namespace {

struct InspectArgs {
  std::string ref;
  bool json = false;
};

int run_inspect(const InspectArgs& a) {
  Output out = Output::detect(a.json, false);
  oci::ImageRef ref = oci::ImageRef::parse(a.ref);
  if (ref.kind != oci::ImageRef::Kind::oci_layout) {
    throw util::Error(util::ErrorKind::usage, "inspect reads oci:DIR[:TAG] references only in this version",
                      "e.g. paddle-image inspect oci:out/image:latest");
  }
  auto layout = oci::OciLayout::open_existing(ref.path);
  oci::Descriptor d = layout.resolve(ref.tag);
  oci::Manifest m = layout.read_manifest(d);
  std::string config_bytes = layout.blobs().read_small(m.config.digest);
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(config_bytes, "config"));
  nlohmann::json j = {{"reference", ref.str()},
                      {"digest", d.digest.str()},
                      {"manifest", oci::to_json(m)},
                      {"config", oci::parse_json(config_bytes, "config")}};
  std::ostringstream t;
  t << "Reference:    " << ref.str() << "\n";
  t << "Digest:       " << d.digest.str() << "\n";
  t << "Platform:     " << cfg.os << "/" << cfg.architecture << "\n";
  t << "Created:      " << cfg.created << "\n";
  if (cfg.config.entrypoint) {
    t << "Entrypoint:  ";
    for (const auto& e : *cfg.config.entrypoint) {
      t << " " << e;
    }
    t << "\n";
  }
  if (cfg.config.cmd) {
    t << "Cmd:         ";
    for (const auto& e : *cfg.config.cmd) {
      t << " " << e;
    }
    t << "\n";
  }
  if (!cfg.config.working_dir.empty()) {
    t << "WorkingDir:   " << cfg.config.working_dir << "\n";
  }
  if (!cfg.config.user.empty()) {
    t << "User:         " << cfg.config.user << "\n";
  }
  for (const auto& e : cfg.config.env) {
    t << "Env:          " << e << "\n";
  }
  for (const auto& [k, v] : cfg.config.labels) {
    t << "Label:        " << k << "=" << v << "\n";
  }
  t << "Layers:\n";
  std::int64_t total = 0;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const auto& l = m.layers[i];
    std::string hist;
    std::size_t non_empty = 0;
    for (const auto& h : cfg.history) {
      if (h.empty_layer) {
        continue;
      }
      if (non_empty++ == i) {
        hist = h.created_by;
      }
    }
    t << "  " << l.digest.str() << "  " << human_size(l.size) << "  "
      << l.media_type.substr(l.media_type.rfind('.') + 1) << (hist.empty() ? "" : "  " + hist) << "\n";
    total += l.size;
  }
  t << "Total:        " << human_size(total) << " in " << m.layers.size() << " layer(s)\n";
  out.result(j, t.str());
  return 0;
}

} // namespace

Action add_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* c = app.add_subcommand("inspect", "Show an image's manifest, config and layers");
  c->add_option("reference", a->ref, "oci:DIR[:TAG]")->required();
  c->add_flag("--json", a->json, "Print manifest and config as JSON");
  return [a] { return run_inspect(*a); };
}

} // namespace cli
