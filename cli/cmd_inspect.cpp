#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
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
  bool referrers = false;
  RegistryFlags flags;
};

int run_inspect(const InspectArgs& a) {
  Output out = Output::detect(a.json, false);
  oci::ImageRef ref = oci::ImageRef::parse(a.ref);
  RegistrySession sess(a.flags, out, ref.registry);
  if (a.referrers) {
    if (ref.kind != oci::ImageRef::Kind::registry) {
      throw util::Error(util::ErrorKind::usage, "--referrers lists what a registry holds about an image",
                        "give a registry reference");
    }
    auto reg = sess.connect(ref.registry);
    oci::Digest subject =
        ref.digest.empty() ? reg->get_manifest(ref.repository, ref.tag).digest : oci::Digest::parse(ref.digest);
    bool fallback = false;
    oci::Index idx = reg->referrers(ref.repository, subject, &fallback);
    nlohmann::json list = nlohmann::json::array();
    std::ostringstream t;
    for (const auto& d : idx.manifests) {
      list.push_back(oci::to_json(d));
      t << d.digest.str() << "  " << d.media_type << "\n";
    }
    out.result({{"subject", subject.str()},
                {"referrers", list},
                {"source", fallback ? "fallback tag " + subject.algorithm + "-" + subject.hex : "referrers API"}},
               t.str());
    return 0;
  }
  oci::ImagePtr img = open_image(ref, sess);
  const oci::ManifestBlob& root = img->root();
  nlohmann::json j = {{"reference", ref.str()}};
  std::ostringstream t;
  t << "Reference:    " << ref.str() << "\n";
  if (root.is_index()) {
    j["index"] = {{"digest", root.digest.str()},
                  {"media_type", root.media_type},
                  {"manifests", oci::parse_json(root.bytes, "index")["manifests"]}};
    t << "Index:        " << root.digest.str() << "\n";
    for (const auto& c : oci::index_children(root, img->name())) {
      if (c.platform) {
        t << "  Platform:   " << oci::platform_str(*c.platform) << "  " << c.digest.str() << "\n";
      }
    }
  }
  oci::ManifestBlob md = oci::select_platform(*img, sess.transfer_options());
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(md.bytes, "manifest of " + ref.str()));
  std::string config_bytes = oci::read_small_blob(*img, m.config);
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(config_bytes, "config"));
  oci::Descriptor d = md.descriptor();
  j["digest"] = d.digest.str();
  j["media_type"] = md.media_type;
  j["manifest"] = oci::parse_json(md.bytes, "manifest");
  j["config"] = oci::parse_json(config_bytes, "config");
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
  c->add_option("reference", a->ref, "oci:DIR[:TAG], docker-archive:FILE or a registry reference")->required();
  c->add_flag("--json", a->json, "Print manifest and config as JSON");
  c->add_flag("--referrers", a->referrers,
              "List the image's referrers (signatures, SBOMs): the referrers API, else the sha256-<hex> tag");
  a->flags.add(c, false);
  return [a] { return run_inspect(*a); };
}

} // namespace cli
