#include "builder/image_sources.hpp"

#include "builder/base.hpp"
#include "layers/extract.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <cerrno>
#include <map>
#include <set>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

// A spec whose base is the image source, for the base's machinery.
spec::BuildSpec image_spec(const spec::ImageSourceSpec& im, const oci::Platform& platform, bool by_digest) {
  spec::BuildSpec s;
  s.base = im.ref;
  s.base_resolved = im.resolved;
  oci::ImageRef ref = oci::ImageRef::parse(im.resolved);
  if (by_digest && ref.kind == oci::ImageRef::Kind::registry) {
    ref.digest = im.digest; // fetched by the pin: a tag moved since cannot change what is read
    s.base_resolved = ref.str();
  }
  s.platform = platform;
  return s;
}

// The entries under `root` (itself included) by the layer that wrote each last: the
// paths to read from each layer, hard links' targets with them.
std::map<int, std::set<std::string>> holding_layers(const layers::BaseView& view, const std::string& root,
                                                    std::size_t& skipped) {
  std::map<int, std::set<std::string>> out;
  auto take = [&](const std::string& path, const layers::ViewNode& n) {
    if (n.type == '0' || n.type == '5' || n.type == '2') {
      out[n.layer].insert(path);
    } else if (n.type == '1') {
      out[n.layer].insert(path);
      out[n.layer].insert(n.target);
    } else {
      ++skipped; // devices and FIFOs: a copy rule ships none
    }
  };
  for (auto it = view.nodes().lower_bound(root); it != view.nodes().end(); ++it) {
    if (!root.empty() && it->first != root && it->first.rfind(root + "/", 0) != 0) {
      if (it->first.rfind(root, 0) != 0) {
        break;
      }
      continue; // "usr/lib64" after "usr/lib": not below it
    }
    take(it->first, it->second);
  }
  return out;
}

// The base's machinery on the image: opened, the pin checked, its view loaded.
Base open_image_source(const spec::CopySpec& cs, const LayerContext& cx) {
  const spec::ImageSourceSpec& im = *cs.image;
  spec::BuildSpec s = image_spec(im, cx.platform, true);
  Base b = util::with_context(cs.origin + ": image " + im.ref,
                              [&] { return open_build_base(s, cx.options, cx.cache, cx.events); });
  if (!b.digest || b.digest->str() != im.digest) {
    throw Error(ErrorKind::input,
                cs.origin + ": image " + im.ref + " now holds " +
                    (b.digest ? b.digest->str() : std::string("nothing")) + " for " + oci::platform_str(cx.platform) +
                    ", not the pinned " + im.digest + (im.pinned_by == "lock" ? " (the sources lock's)" : ""),
                im.pinned_by == "lock" ? "if the image was rebuilt on purpose, run paddle-image lock --sources --update"
                                       : "if the image was rebuilt on purpose, put its new digest in the spec");
  }
  return b;
}

} // namespace

std::string image_source_digest(const spec::ImageSourceSpec& im, const oci::Platform& platform, const BuildOptions& o,
                                const Events& ev, const std::string& origin) {
  spec::BuildSpec s = image_spec(im, platform, false);
  Base b = util::with_context(origin + ": image " + im.ref, [&] { return open_base(s, o.matrix_files, o.connect); });
  (void)ev;
  if (!b.digest) {
    throw Error(ErrorKind::input, origin + ": image " + im.ref + " has no manifest for " + oci::platform_str(platform),
                "name an image built for the spec's platform");
  }
  return b.digest->str();
}

fs::path lay_out_image(const spec::CopySpec& cs, const LayerContext& cx, nlohmann::json& report) {
  const spec::ImageSourceSpec& im = *cs.image;
  KeyHasher id;
  id.add({{"image-source", 1}, {"digest", im.digest}, {"path", im.path}});
  const fs::path dir = cx.cache.layout().sources() / id.finish();
  const std::string name = im.path == "/" ? "root" : im.path.substr(im.path.rfind('/') + 1);
  const fs::path out = dir / "tree" / name;
  report = {{"image", im.ref}, {"digest", im.digest}, {"path", im.path}, {"to", cs.to}, {"layers_read", 0}};
  std::error_code ec;
  if (fs::exists(dir / "tree", ec)) {
    return out;
  }
  Base b = open_image_source(cs, cx);
  const std::string what = cs.origin + ": " + im.path + " in image " + im.ref;
  std::vector<std::string> followed;
  const std::string real = b.view->resolve(im.path.substr(1), true, &followed, what);
  const layers::ViewNode* node = real.empty() ? nullptr : b.view->find(real);
  if (node == nullptr && !real.empty()) {
    throw Error(ErrorKind::input, what + ": the image has no such path",
                "check the path with paddle-image inspect " + im.ref + " --json (its nodes)");
  }
  std::size_t skipped = 0;
  auto wanted = holding_layers(*b.view, real, skipped);
  util::create_dirs(cx.cache.layout().staging(), "the cache's staging directory");
  util::TempDir tmp(cx.cache.layout().staging(), "image-source-");
  const fs::path root = tmp.path() / "root";
  for (const auto& entry : wanted) {
    const std::set<std::string>& paths = entry.second;
    const oci::Descriptor& layer = b.manifest.layers.at(static_cast<std::size_t>(entry.first));
    layers::ExtractOptions eo;
    eo.want = [&paths](const std::string& rel) { return paths.count(rel) != 0; };
    eo.absolute_symlinks = true;
    eo.into_existing = true;
    layers::extract_archive(b.local_blob(layer), root, eo, what + " (layer " + layer.digest.str() + ")");
  }
  cx.events.info("  " + im.path + " from image " + im.ref + ": " + std::to_string(wanted.size()) + " of " +
                 std::to_string(b.manifest.layers.size()) + " layer(s) read" +
                 (skipped > 0 ? ", " + std::to_string(skipped) + " device(s) or FIFO(s) left out" : ""));
  util::create_dirs(tmp.path() / "pub" / "tree", "the cache's staging directory");
  if (::rename((root / real).c_str(), (tmp.path() / "pub" / "tree" / name).c_str()) != 0) {
    util::throw_errno("cannot move " + (root / real).string());
  }
  util::create_dirs(dir.parent_path(), "the cache's sources directory");
  if (::rename((tmp.path() / "pub").c_str(), dir.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY) {
    util::throw_errno("cannot rename into " + dir.string());
  }
  report["layers_read"] = wanted.size();
  report["links_followed"] = followed;
  return out;
}

} // namespace builder
