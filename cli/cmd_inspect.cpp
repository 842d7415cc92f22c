#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "layers/base_view.hpp"
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "python/installed.hpp"
#include "util/error.hpp"

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

namespace cli {

namespace {

struct InspectArgs {
  std::string ref;
  bool json = false;
  bool referrers = false;
  bool base_view = false;
  RegistryFlags flags;
};

std::string octal(std::uint32_t mode) {
  std::string out;
  for (int shift = 9; shift >= 0; shift -= 3) {
    out += static_cast<char>('0' + ((mode >> shift) & 7u));
  }
  return out;
}

// The counts and facts of a base view: paths by type, Python, glibc, CUDA, cuDNN, OS,
// dpkg and the Python distributions installed.
void base_view_facts(std::ostream& t, const layers::BaseView& view) {
  std::map<char, std::size_t> count;
  for (const auto& [path, n] : view.nodes()) {
    ++count[n.type];
  }
  const auto& f = view.facts();
  t << "Paths:        " << view.nodes().size() << " (" << count['5'] << " directories, " << count['0'] << " files, "
    << count['2'] << " symlinks, " << count['1'] << " hard links)\n";
  for (const auto& i : f.interpreters) {
    t << "Python:       " << i << "\n";
  }
  if (f.glibc) {
    t << "glibc:        " << f.glibc->first << "." << f.glibc->second << "\n";
  }
  if (!f.cuda.empty()) {
    t << "CUDA:         " << f.cuda << " (" << f.cuda_source << ")\n";
  }
  if (!f.cudnn.empty()) {
    t << "cuDNN:        " << f.cudnn << " (" << f.cudnn_source << ")\n";
  }
  if (!f.os_id.empty()) {
    t << "OS:           " << f.os_id << " " << f.os_version_id << "\n";
  }
  t << "dpkg:         " << f.dpkg.size() << " packages\n";
  auto dists = python::installed_distributions(view);
  t << "Python dists: " << dists.size() << "\n";
  for (const auto& p : dists) {
    t << "  " << p.name << " " << p.version << "  /" << p.location
      << (p.installer.empty() ? "" : "  (" + p.installer + ")") << "\n";
  }
}

// Directories a layer writing into them keeps as they are (not root's 0755, or with
// xattrs).
void base_view_directories(std::ostream& t, const layers::BaseView& view) {
  t << "Directories that are not root's 0755 (a layer writing into them keeps this):\n";
  for (const auto& [path, n] : view.nodes()) {
    if (n.type == '5' && (n.mode != 0755 || n.owner.uid != 0 || n.owner.gid != 0 || !n.xattrs.empty())) {
      t << "  /" << path << "  " << octal(n.mode) << " " << n.owner.uid << ":" << n.owner.gid
        << (n.xattrs.empty() ? "" : "  (xattrs)") << "\n";
    }
  }
}

// Symlinks that lead to a directory (a layer writing through them writes there).
void base_view_symlinks(std::ostream& t, const layers::BaseView& view) {
  t << "Symlinks to directories (a layer writing through them writes where they lead):\n";
  for (const auto& [path, n] : view.nodes()) {
    if (n.type != '2') {
      continue;
    }
    std::vector<std::string> links;
    std::string to;
    try {
      to = view.resolve(path, true, &links, "/" + path);
    } catch (const util::Error&) {
      continue; // leads outside the root or loops: shown by a build that writes through it
    }
    const layers::ViewNode* target = view.find(to);
    if (target != nullptr && target->type == '5') {
      t << "  /" << path << " -> " << n.target << (to != n.target && "/" + to != n.target ? "  (/" + to + ")" : "")
        << "\n";
    }
  }
}

// `inspect --base-view`: what a layer built on the image lands on.
int print_base_view(const Output& out, const oci::ImageRef& ref, const oci::Descriptor& d,
                    const layers::BaseView& view) {
  if (out.json) {
    // Streamed: a document tree of every path would cost several times the view.
    view.write_json(std::cout, {{"reference", ref.str()}, {"digest", d.digest.str()}},
                    {{"python", python::to_json(python::installed_distributions(view))}});
    std::cout.flush();
    return 0;
  }
  std::ostringstream t;
  t << "Base view of " << ref.str() << " (" << d.digest.str() << ", " << view.layers().size() << " layers)\n";
  base_view_facts(t, view);
  base_view_directories(t, view);
  base_view_symlinks(t, view);
  out.result(nullptr, t.str());
  return 0;
}

// `inspect --referrers`: what a registry holds about the image (the referrers API, else
// the sha256-<hex> tag).
int run_referrers(const oci::ImageRef& ref, RegistrySession& sess, const Output& out) {
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

// An index's digest and the platforms it lists.
void describe_index(const oci::Image& img, nlohmann::json& j, std::ostream& t) {
  const oci::ManifestBlob& root = img.root();
  j["index"] = {{"digest", root.digest.str()},
                {"media_type", root.media_type},
                {"manifests", oci::parse_json(root.bytes, "index")["manifests"]}};
  t << "Index:        " << root.digest.str() << "\n";
  for (const auto& c : oci::index_children(root, img.name())) {
    if (c.platform) {
      t << "  Platform:   " << oci::platform_str(*c.platform) << "  " << c.digest.str() << "\n";
    }
  }
}

// "Entrypoint:   a b" (each word after a space).
void describe_words(std::ostream& t, const char* label, const std::optional<std::vector<std::string>>& words) {
  if (!words) {
    return;
  }
  t << label;
  for (const auto& e : *words) {
    t << " " << e;
  }
  t << "\n";
}

// The config's run settings, environment and labels.
void describe_config(const oci::ImageConfig& cfg, std::ostream& t) {
  t << "Platform:     " << cfg.os << "/" << cfg.architecture << "\n";
  t << "Created:      " << cfg.created << "\n";
  describe_words(t, "Entrypoint:  ", cfg.config.entrypoint);
  describe_words(t, "Cmd:         ", cfg.config.cmd);
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
}

// One line per layer (digest, size, compression, the history entry that made it) and
// the total.
void describe_layers(const oci::Manifest& m, const oci::ImageConfig& cfg, std::ostream& t) {
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
}

int run_inspect(const InspectArgs& a) {
  Output out = Output::detect(a.json, false);
  oci::ImageRef ref = oci::ImageRef::parse(a.ref);
  RegistrySession sess(a.flags, out, ref.registry);
  if (a.referrers) {
    return run_referrers(ref, sess, out);
  }
  oci::ImagePtr img = open_image(ref, sess);
  nlohmann::json j = {{"reference", ref.str()}};
  std::ostringstream t;
  t << "Reference:    " << ref.str() << "\n";
  if (img->root().is_index()) {
    describe_index(*img, j, t);
  }
  oci::ManifestBlob md = oci::select_platform(*img, sess.transfer_options());
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(md.bytes, "manifest of " + ref.str()));
  std::string config_bytes = oci::read_small_blob(*img, m.config);
  oci::ImageConfig cfg = oci::config_from_json(oci::parse_json(config_bytes, "config"));
  oci::Descriptor d = md.descriptor();
  if (a.base_view) {
    return print_base_view(out, ref, d, layers::read_base_view(*img, m, cfg.config.env));
  }
  j["digest"] = d.digest.str();
  j["media_type"] = md.media_type;
  j["manifest"] = oci::parse_json(md.bytes, "manifest");
  j["config"] = oci::parse_json(config_bytes, "config");
  t << "Digest:       " << d.digest.str() << "\n";
  describe_config(cfg, t);
  describe_layers(m, cfg, t);
  out.result(j, t.str());
  return 0;
}

} // namespace

Action add_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* c = app.add_subcommand("inspect", "Show an image's manifest, config and layers");
  c->add_option("reference", a->ref,
                "oci:DIR[:TAG], docker-archive:FILE, oci-archive:FILE[:TAG] or a registry reference")
      ->required();
  c->add_flag("--json", a->json, "Print manifest and config as JSON");
  c->add_flag("--base-view", a->base_view,
              "Show the file tree a layer built on this image lands on: paths after whiteouts, directories' modes "
              "and owners, symlinked directories, and the facts read from it (Python, glibc, dpkg, CUDA, cuDNN); "
              "--json gives every path");
  c->add_flag("--referrers", a->referrers,
              "List the image's referrers (signatures, SBOMs): the referrers API, else the sha256-<hex> tag");
  a->flags.add(c, false);
  return [a] { return run_inspect(*a); };
}

} // namespace cli
