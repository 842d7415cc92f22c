#include "builder/supply_chain.hpp"

#include "layers/base_view.hpp"
#include "layers/packages.hpp"
#include "python/installed.hpp"
#include "spec/spec.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/url.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <tuple>

namespace builder {

using nlohmann::json;
using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

signing::ResourceDescriptor resource(std::string name, std::string uri, const std::string& digest,
                                     json annotations = json::object()) {
  signing::ResourceDescriptor r;
  r.name = std::move(name);
  r.uri = std::move(uri);
  if (!digest.empty()) {
    auto colon = digest.find(':');
    if (colon == std::string::npos) {
      r.digest["sha256"] = digest;
    } else {
      r.digest[digest.substr(0, colon)] = digest.substr(colon + 1);
    }
  }
  r.annotations = std::move(annotations);
  return r;
}

// The layer kinds paddle-image wrote, from the config's history ("paddle-image build:
// data layer 'models'"), one per non-empty history entry; "" for anything else.
std::vector<std::pair<std::string, std::string>> layer_origins(const oci::ImageConfig& c, std::size_t layers) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string prefix = "paddle-image build: ";
  for (const auto& h : c.history) {
    if (h.empty_layer) {
      continue;
    }
    std::string kind, name;
    if (h.created_by.rfind(prefix, 0) == 0) {
      std::string rest = h.created_by.substr(prefix.size());
      kind = rest.substr(0, rest.find(' '));
      auto q1 = rest.find('\'');
      auto q2 = rest.rfind('\'');
      if (q1 != std::string::npos && q2 > q1) {
        name = rest.substr(q1 + 1, q2 - q1 - 1);
      }
    }
    out.emplace_back(kind, name);
  }
  // A history that does not line up with the layers tells nothing.
  if (out.size() != layers) {
    out.assign(layers, {});
  }
  return out;
}

// Last, the packages of the SPDX documents the image carries (var/lib/db/sbom/, as
// apko images do and syft reads): software no package manager installed, such as the
// libraries paddle-image's release archive bundles. A document that is not SPDX JSON
// adds nothing; the packages come in the document's order.
void add_embedded_sboms(const layers::BaseView& view, signing::SbomInput& in) {
  for (const auto& [path, content] : view.contents()) {
    if (!layers::is_embedded_sbom(path)) {
      continue;
    }
    json doc = json::parse(content, nullptr, false);
    for (auto& c : signing::spdx_components(doc, path)) {
      c.layer = view.layer_of(path);
      in.components.push_back(std::move(c));
    }
  }
}

// What a layer fetched, each by its URL and SHA-256: a debs layer's packages (role deb),
// a files or data layer's downloads (role download).
void add_fetched_dependencies(const LayerReport& l, signing::ProvenanceInput& p) {
  for (const auto& d : l.debs.is_array() ? l.debs : nlohmann::json::array()) {
    // Each package a debs layer installs: the file fetched (URL) and its SHA-256.
    signing::ResourceDescriptor dep =
        resource(d.value("filename", ""), d.value("url", ""), "sha256:" + d.value("sha256", ""),
                 {{"role", "deb"},
                  {"layer", l.name},
                  {"package", d.value("name", "")},
                  {"version", d.value("version", "")},
                  {"architecture", d.value("architecture", "")}});
    p.dependencies.push_back(dep);
  }
  for (const auto& d : l.sources.is_array() ? l.sources : nlohmann::json::array()) {
    if (d.contains("git")) {
      // A git source (git:), by the commit the spec pins.
      std::string repo = d.value("git", "");
      signing::ResourceDescriptor g = resource(repo.substr(repo.rfind('/') + 1), "git+" + repo, "",
                                               {{"role", "git"}, {"layer", l.name}, {"to", d.value("to", "")}});
      g.digest["gitCommit"] = d.value("commit", "");
      p.dependencies.push_back(g);
      continue;
    }
    // Each file a files or data layer downloads (url:), by the SHA-256 the spec pins.
    std::string url = d.value("url", "");
    p.dependencies.push_back(resource(
        url.substr(url.rfind('/') + 1), url, "sha256:" + d.value("sha256", ""),
        {{"role", "download"}, {"layer", l.name}, {"extract", d.value("extract", false)}, {"to", d.value("to", "")}}));
  }
}

} // namespace

signing::ProvenanceInput build_provenance(const spec::BuildSpec& s, const BuildOptions& o, const BuildReport& rep,
                                          const ProvenanceContext& ctx) {
  json r = rep.to_json();
  signing::ProvenanceInput p;
  p.builder_version = ctx.tool_version;
  p.invocation_id = ctx.invocation_id;
  p.started_on = ctx.started_on;
  p.finished_on = ctx.finished_on;

  // What the user asked for: the spec (by file name, no host path), tags, outputs.
  json outputs = json::array();
  for (const auto& out : ctx.outputs) {
    outputs.push_back(out.kind == oci::ImageRef::Kind::registry ? out.str() : out.str().substr(0, out.str().find(':')));
  }
  p.external_parameters = {{"spec", s.file.filename().string()},           {"image", s.name},
                           {"tags", ctx.tags.empty() ? s.tags : ctx.tags}, {"platform", oci::platform_str(s.platform)},
                           {"source_date_epoch", o.source_date_epoch},     {"outputs", outputs}};
  if (o.compression) {
    p.external_parameters["compression"] = oci::compression_name(*o.compression);
  }

  // What the build resolved: the compatibility facts the image is labelled with (from
  // requires:, or from the chosen base with base: auto), and what the spec asked for.
  json resolved = json::object();
  for (const auto& [k, v] : ctx.labels) {
    if (k.rfind("io.paddle-image.", 0) == 0) {
      resolved[k] = v;
    }
  }
  json requested = {{"cuda", s.requires_.cuda},
                    {"cudnn", s.requires_.cudnn},
                    {"paddle", s.requires_.paddle},
                    {"driver_min", s.requires_.driver_min},
                    {"gpu_archs", s.requires_.gpu_archs}};
  p.internal_parameters = {{"compatibility", resolved}, {"requires", requested}, {"base", r["base"]}};
  if (!rep.resolution.is_null()) {
    p.internal_parameters["resolution"] = rep.resolution;
  }

  // Every input by digest: the spec file, the base, the wheels, each files/data layer.
  p.dependencies.push_back(resource(s.file.filename().string(), "",
                                    "sha256:" + util::sha256_hex(util::read_file(s.file)), {{"role", "spec"}}));
  if (rep.base_digest) {
    std::string uri = s.base == "auto" ? rep.base_name : s.base;
    if (uri.rfind("oci:/", 0) == 0 || uri.rfind("docker-archive:/", 0) == 0) {
      // An absolute host path says nothing about the base and everything about the
      // build machine: keep only its last component.
      auto colon = uri.find(':');
      uri = uri.substr(0, colon + 1) + fs::path(uri.substr(colon + 1)).filename().string();
    } else if (uri.rfind("oci:", 0) != 0 && uri.rfind("docker-archive:", 0) != 0) {
      uri = "docker://" + uri;
    }
    p.dependencies.push_back(resource(rep.base_name, uri, rep.base_digest->str(), {{"role", "base"}}));
  }
  for (const auto& w : r["wheels"]) {
    std::string name = w.value("name", ""), version = w.value("version", "");
    p.dependencies.push_back(resource(w.value("filename", ""), "pkg:pypi/" + name + "@" + version,
                                      w.value("sha256", ""), {{"role", "wheel"}, {"layer", w.value("layer", "")}}));
  }
  for (const auto& l : rep.layers) {
    add_fetched_dependencies(l, p);
    if (auto k = spec::kind_of_name(l.kind); k && spec::ships_copied_files(*k)) {
      // The layer's content (its uncompressed tar) is the digest of its inputs.
      p.dependencies.push_back(resource(l.name, "", l.blob.diff_id.str(), {{"role", l.kind + " layer"}}));
    }
  }
  if (!rep.revision.empty()) {
    std::string source = util::without_userinfo(o.source.empty() ? s.source : o.source);
    std::string rev = rep.revision;
    bool dirty = rev.size() > 6 && rev.compare(rev.size() - 6, 6, "-dirty") == 0;
    signing::ResourceDescriptor d =
        resource("source", source.empty() ? "" : "git+" + source, "", {{"role", "source"}, {"dirty", dirty}});
    d.digest["gitCommit"] = dirty ? rev.substr(0, rev.size() - 6) : rev;
    p.dependencies.push_back(d);
  }
  for (const auto& l : rep.layers) {
    nlohmann::json ann = {{"kind", l.kind}};
    if (!l.cache_origin.empty()) {
      // Not built by this build: reused from the local layer cache or a registry cache.
      ann["cacheOrigin"] = l.cache_origin;
    }
    if (!l.cache_repository.empty()) {
      // Taken from a registry cache (by this build, or by an earlier one into the local
      // cache), whose writers vouch for its bytes (verified: its entry was signed by the
      // --cache-verify-key).
      ann["cacheRepository"] = l.cache_repository;
      ann["cacheVerified"] = l.cache_verified;
    }
    p.byproducts.push_back(resource(l.name, "", l.blob.digest.str(), ann));
  }
  return p;
}

signing::SbomInput image_sbom(const oci::Image& img, const oci::ManifestBlob& m, const SbomOptions& opt) {
  if (m.is_index()) {
    throw Error(ErrorKind::input, img.name() + ": an SBOM describes one image, and this is an index",
                "choose a platform with --platform");
  }
  oci::Manifest man = oci::manifest_from_json(oci::parse_json(m.bytes, "manifest of " + img.name()));
  oci::ImageConfig cfg = oci::read_config(img, man);
  auto origins = layer_origins(cfg, man.layers.size());
  std::vector<oci::Descriptor> scanned; // the layers whose packages count, bottom to top
  signing::SbomInput in;
  in.image_name = opt.image_name;
  in.image = m.digest;
  in.created = opt.created;
  in.tool_version = opt.tool_version;
  for (std::size_t i = 0; i < man.layers.size(); ++i) {
    const auto& d = man.layers[i];
    const auto& [kind, name] = origins[i];
    bool is_base = opt.base_layers.empty() ? kind.empty() : opt.base_layers.count(d.digest.str()) > 0;
    if (auto k = spec::kind_of_name(kind); k && spec::ships_copied_files(*k)) {
      signing::SbomComponent c;
      c.kind = "data";
      c.name = name.empty() ? d.digest.str() : name;
      c.location = kind + " layer '" + name + "'";
      c.layer = d.digest.str();
      c.sha256 = d.digest.hex;
      in.components.push_back(c);
    }
    if (!is_base || opt.scan_base) {
      scanned.push_back(d);
    }
  }
  // The packages come from the image's file tree (layers::BaseView, the reader build and
  // doctor use): a base whose view a build cached is not read again, only the layers
  // above it.
  layers::ViewCacheOptions vo;
  vo.cache_dir = opt.cache_dir;
  vo.store = opt.store_view;
  vo.what = img.name();
  vo.info = opt.info;
  layers::BaseView view = layers::cached_view(
      scanned, [&](const oci::Descriptor& x) { return img.open_blob(x, 0); }, cfg.config.env, vo);
  layers::Inventory inv = view.inventory();
  in.os_id = inv.os_id;
  in.os_version = inv.os_version_id;
  for (const auto& p : inv.packages) {
    signing::SbomComponent c;
    c.kind = p.type;
    c.name = p.name;
    c.version = p.version;
    c.purl = layers::purl(p, inv);
    c.location = p.location;
    c.layer = p.layer;
    in.components.push_back(c);
  }
  // After the dpkg packages, by name as they were listed before (type, name, version,
  // location).
  auto dists = python::installed_distributions(view);
  std::sort(dists.begin(), dists.end(), [](const python::Distribution& a, const python::Distribution& b) {
    return std::tie(a.name, a.version, a.location) < std::tie(b.name, b.version, b.location);
  });
  for (const auto& d : dists) {
    signing::SbomComponent c;
    c.kind = "pypi";
    c.name = d.name;
    c.version = d.version;
    c.purl = python::purl(d);
    c.location = d.location;
    c.layer = d.layer;
    in.components.push_back(c);
  }
  add_embedded_sboms(view, in);
  return in;
}

} // namespace builder
