#include "builder/base.hpp"

#include "compat_matrix/facts.hpp"
#include "layers/cache.hpp"
#include "python/installed.hpp"
#include "python/pep440.hpp"
#include "util/encoding.hpp"

#include "compat_matrix/resolver.hpp"
#include "compat_matrix/rules.hpp"
#include "layers/compress.hpp"
#include "layers/tar.hpp"
#include "oci/layout_image.hpp"
#include "oci/reference.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <sys/stat.h>

#include <regex>
#include <sstream>

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

void check_base(const Base& b, const spec::BuildSpec& s) {
  if (b.config.os != s.platform.os || b.config.architecture != s.platform.architecture) {
    std::string want = oci::platform_str(s.platform);
    std::string have = b.config.os + "/" + b.config.architecture;
    throw Error(ErrorKind::input, "base is " + have + " but the spec builds " + want,
                "set platform: " + have + " or use a " + want + " base");
  }
  if (b.manifest.layers.size() != b.config.diff_ids.size()) {
    throw Error(ErrorKind::input, "base manifest has " + std::to_string(b.manifest.layers.size()) +
                                      " layers but its config lists " + std::to_string(b.config.diff_ids.size()) +
                                      " diff_ids");
  }
}

// Docker schema 2 layer types become their OCI equivalents (same bytes).
std::string oci_layer_type(const std::string& t) {
  if (t == oci::media::k_docker_layer_gzip) {
    return oci::media::k_layer_gzip;
  }
  if (t == "application/vnd.docker.image.rootfs.diff.tar") {
    return oci::media::k_layer_tar;
  }
  return t;
}

// The spec's platform's manifest of `img`: an index or a Docker manifest list has it
// picked, with an error whose hint is the spec's, not copy's flags.
oci::ManifestBlob platform_manifest(const oci::Image& img, const spec::BuildSpec& s) {
  oci::CopyOptions want;
  want.platform = s.platform;
  try {
    return oci::select_platform(img, want);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::incompatible) {
      throw;
    }
    throw Error(e.kind(), e.what(),
                "set platform: in " + (s.file.empty() ? std::string("the spec") : s.file.filename().string()) +
                    " to one the base has (default linux/amd64), or choose a base built for " +
                    oci::platform_str(s.platform));
  }
}

// Opens the base image (the platform's manifest when its reference names an index or a
// Docker manifest list, as a pulled Paddle image's does; its config, verified) and, for
// a local layout, checks that its layer blobs are all there.
void open_image_base(Base& b, const spec::BuildSpec& s, oci::ImagePtr img) {
  oci::ManifestBlob m = platform_manifest(*img, s);
  b.digest = m.digest;
  b.manifest = oci::manifest_from_json(oci::parse_json(m.bytes, "manifest of " + img->name()));
  b.config = oci::read_config(*img, b.manifest);
  for (auto& l : b.manifest.layers) {
    l.media_type = oci_layer_type(l.media_type);
  }
  check_base(b, s);
  for (const auto& l : b.manifest.layers) {
    fs::path file = img->hints(l).file;
    if (file.empty()) {
      continue; // in a registry or inside an archive: verified as it is read
    }
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec || static_cast<std::int64_t>(size) != l.size) {
      throw Error(ErrorKind::integrity,
                  "base layer " + l.digest.str() + " is missing or has the wrong size in " + img->name(),
                  "copy the base image again");
    }
  }
  b.image = std::move(img);
}

// The stat fields that change whenever a file's bytes can have changed.
nlohmann::json stat_key(const struct stat& st) {
  return {{"dev", static_cast<std::uint64_t>(st.st_dev)},
          {"ino", static_cast<std::uint64_t>(st.st_ino)},
          {"size", static_cast<std::int64_t>(st.st_size)},
          {"mtime_ns", util::timespec_ns(st.st_mtim)},
          {"ctime_ns", util::timespec_ns(st.st_ctim)}};
}

// A registry base: the platform's manifest and the config, nothing else.
void open_registry_base(Base& b, const spec::BuildSpec& s, const oci::ImageRef& ref, const imageio::Connect& connect,
                        const std::string& where) {
  if (!connect) {
    throw Error(ErrorKind::usage, where + ": base " + ref.str() + " is in a registry, which this command cannot reach",
                "use paddle-image build, or copy the base into a local layout");
  }
  open_image_base(b, s, imageio::open_source(ref, connect));
}

ResolvedBase resolve_auto(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix) {
  spec::ResolveSpec rs = s.resolve.value_or(spec::ResolveSpec{});
  std::vector<std::string> files = rs.matrix;
  files.insert(files.end(), extra_matrix.begin(), extra_matrix.end());
  compat::Matrix m = compat::load_matrix(files);
  compat::Constraints c;
  c.paddle = rs.paddle;
  c.cuda = rs.cuda;
  c.cudnn = rs.cudnn;
  c.need_tensorrt = rs.tensorrt;
  c.python = rs.python;
  c.gpus = rs.gpus;
  c.drivers = rs.drivers;
  c.registry = rs.registry;
  c.kind = rs.kind;
  c.strict_driver = rs.strict_driver;
  c.pre = rs.pre;
  c.allow_forward_compat = rs.allow_forward_compat;
  std::string fallback = rs.origin.empty() ? s.base_origin : rs.origin;
  c.field = [rs, fallback](const std::string& f, int i) {
    std::string key = f == "gpu" ? "gpus" : f == "driver" ? "drivers" : f;
    std::string indexed = i >= 0 ? key + "[" + std::to_string(i) + "]" : key;
    auto it = rs.origins.find(indexed);
    if (it == rs.origins.end()) {
      it = rs.origins.find(key);
    }
    return (it == rs.origins.end() ? fallback : it->second) + ": resolve." + indexed;
  };
  compat::Resolution r = compat::resolve(m, c);
  if (r.candidates.empty()) {
    std::string why = compat::describe(r, false);
    while (!why.empty() && why.back() == '\n') {
      why.pop_back();
    }
    throw Error(ErrorKind::incompatible, s.base_origin + ": base: auto: " + why,
                "relax the constraints under resolve:, or explore with `paddle-image resolve`");
  }
  const compat::Candidate& best = r.candidates.front();
  ResolvedBase rb;
  rb.reference = best.reference;
  rb.paddle = best.paddle;
  rb.cuda = best.image->cuda;
  rb.cudnn = best.image->cudnn;
  rb.tensorrt = best.image->tensorrt;
  rb.python = best.python;
  rb.driver_full = best.min_driver;
  rb.driver_minor = best.minor_driver;
  rb.driver_level = compat::to_string(best.level);
  rb.archs = best.gpu_archs;
  rb.report = compat::to_json(r, true);
  return rb;
}

} // namespace

namespace {

Base open_base_itself(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix,
                      const imageio::Connect& connect) {
  Base b;
  b.name = s.base;
  if (s.base == "scratch") {
    b.config.os = s.platform.os;
    b.config.architecture = s.platform.architecture;
    return b;
  }
  std::string where = s.base_origin.empty() ? s.file.string() : s.base_origin;
  if (s.base == "auto") {
    ResolvedBase rb = resolve_auto(s, extra_matrix);
    std::string tag = rb.reference.substr(rb.reference.rfind(':') + 1);
    b.name = rb.reference;
    if (!s.resolve || s.resolve->layout.empty()) {
      oci::ImageRef ref = oci::ImageRef::parse(rb.reference);
      util::with_context("base " + rb.reference + " (chosen by base: auto)",
                         [&] { open_registry_base(b, s, ref, connect, where); });
      b.resolved = rb;
      return b;
    }
    util::with_context("base " + rb.reference + " (chosen by base: auto) in " + s.resolve->layout, [&] {
      oci::ImageRef ref;
      ref.kind = oci::ImageRef::Kind::oci_layout;
      ref.path = s.resolve->layout;
      ref.tag = tag;
      open_image_base(b, s, imageio::open_source(ref, connect));
    });
    b.resolved = rb;
    return b;
  }
  oci::ImageRef ref = oci::ImageRef::parse(s.base_resolved.empty() ? s.base : s.base_resolved);
  if (ref.kind == oci::ImageRef::Kind::registry) {
    util::with_context("base " + ref.str(), [&] { open_registry_base(b, s, ref, connect, where); });
    return b;
  }
  util::with_context("base " + s.base, [&] { open_image_base(b, s, imageio::open_source(ref, connect)); });
  return b;
}

} // namespace

std::optional<ResolvedBase> published_base(const compat::Matrix& m, const oci::ImageRef& ref) {
  if (ref.tag.empty()) {
    return std::nullopt;
  }
  if (ref.kind == oci::ImageRef::Kind::registry) {
    bool known = false;
    for (const auto& r : m.registries) {
      std::string path = r.repository.substr(r.repository.find('/') + 1);
      known = known || ref.repository == path ||
              (ref.repository.size() > path.size() &&
               ref.repository.compare(ref.repository.size() - path.size() - 1, std::string::npos, "/" + path) == 0);
    }
    if (!known) {
      return std::nullopt;
    }
  }
  for (const auto& release : m.paddle) {
    for (const auto& img : release.images) {
      if (img.tag != ref.tag) {
        continue;
      }
      ResolvedBase rb;
      rb.reference = ref.str();
      rb.paddle = release.version;
      rb.cuda = img.cuda;
      rb.cudnn = img.cudnn;
      rb.tensorrt = img.tensorrt;
      rb.python = release.python;
      if (const compat::CudaRow* c = m.find_cuda(img.cuda); c != nullptr && c->released) {
        rb.driver_full = c->driver_full;
        rb.driver_minor = c->driver_minor;
      }
      for (int a : img.archs) {
        rb.archs.push_back(compat::sm_name(a));
      }
      rb.origin = img.origin;
      return rb;
    }
  }
  return std::nullopt;
}

Base open_base(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix,
               const imageio::Connect& connect) {
  Base b = open_base_itself(s, extra_matrix, connect);
  if (b.name == "scratch") {
    return b;
  }
  std::vector<std::string> files = s.resolve ? s.resolve->matrix : std::vector<std::string>{};
  files.insert(files.end(), extra_matrix.begin(), extra_matrix.end());
  b.matrix = std::make_shared<const compat::Matrix>(compat::load_matrix(files));
  if (!b.resolved && s.base != "auto") {
    b.published = published_base(*b.matrix, oci::ImageRef::parse(s.base_resolved.empty() ? s.base : s.base_resolved));
  }
  return b;
}

std::size_t verify_local_base(const Base& base, const fs::path& cache_dir) {
  if (!base.image) {
    return 0;
  }
  const layers::CacheLayout layout(cache_dir);
  fs::path dir = layout.base_info_blobs();
  std::size_t hashed = 0;
  for (const auto& layer : base.manifest.layers) {
    fs::path blob = base.image->hints(layer).file;
    if (blob.empty()) {
      continue; // not a local file: checked against its digest as it streams
    }
    util::create_dirs(dir, "the base-info directory");
    struct stat st {};
    if (::stat(blob.c_str(), &st) != 0) {
      throw Error(ErrorKind::integrity, "base layer " + layer.digest.str() + " is missing from " + base.name,
                  "copy the base image again");
    }
    nlohmann::json key = stat_key(st);
    fs::path record = layout.base_info_record(layer.digest);
    std::error_code ec;
    if (fs::exists(record, ec)) {
      try {
        if (nlohmann::json::parse(util::read_file(record)) == key) {
          continue; // verified before and untouched since
        }
      } catch (const nlohmann::json::exception&) {
        // A damaged record (an interrupted write of an old version) only costs a re-hash.
      }
    }
    ++hashed;
    std::string actual = util::sha256_file_hex(blob);
    if (actual != layer.digest.hex) {
      throw Error(ErrorKind::integrity,
                  "base layer " + layer.digest.str() + " in " + base.name +
                      " is corrupt: its bytes hash to sha256:" + actual,
                  "the file " + blob.string() + " was changed in place; copy or pull the base image again");
    }
    util::write_file_atomic(record, key.dump());
  }
  return hashed;
}

void refresh_local_base_records(const Base& base, const fs::path& cache_dir, const DebugLog& debug) {
  if (!base.image) {
    return;
  }
  const layers::CacheLayout layout(cache_dir);
  fs::path dir = layout.base_info_blobs();
  for (const auto& layer : base.manifest.layers) {
    fs::path record = layout.base_info_record(layer.digest);
    fs::path blob = base.image->hints(layer).file;
    struct stat st {};
    if (blob.empty() || ::stat(blob.c_str(), &st) != 0) {
      continue;
    }
    nlohmann::json now = stat_key(st);
    try {
      nlohmann::json was = nlohmann::json::parse(util::read_file(record));
      if (was != now && was.at("dev") == now["dev"] && was.at("ino") == now["ino"] && was.at("size") == now["size"] &&
          was.at("mtime_ns") == now["mtime_ns"]) {
        util::write_file_atomic(record, now.dump());
      }
    } catch (const std::exception& e) {
      // Safe: without a record (or with an unreadable one) the next build hashes this
      // blob again; the record is only a shortcut.
      if (debug) {
        debug("base-info: not refreshing " + record.string() + ": " + e.what());
      }
    }
  }
}

BaseInterpreter base_interpreter(const Base& base) {
  BaseInterpreter sc;
  if (!base.view) {
    return sc;
  }
  static const std::regex py_re("/(usr/bin|usr/local/bin)/python3\\.([0-9]+)");
  for (const auto& path : base.view->facts().interpreters) {
    std::smatch mm;
    if (!std::regex_match(path, mm, py_re)) {
      continue;
    }
    int minor = std::stoi(mm[2]);
    std::string dir = "/" + std::string(mm[1]);
    if (sc.minor < 0 || (dir == "/usr/local/bin" && sc.bin_dir != "/usr/local/bin") ||
        (dir == sc.bin_dir && minor > sc.minor)) {
      sc.minor = minor;
      sc.bin_dir = dir;
    }
  }
  sc.glibc = base.view->facts().glibc;
  return sc;
}

namespace {

std::string default_site(const std::string& interpreter, int minor) {
  std::string v = "3." + std::to_string(minor);
  // Debian/Ubuntu's system python reads /usr/local/lib/python3.X/dist-packages.
  if (interpreter.rfind("/usr/bin/", 0) == 0) {
    return "/usr/local/lib/python" + v + "/dist-packages";
  }
  std::string prefix = fs::path(interpreter).parent_path().parent_path().string();
  return prefix + "/lib/python" + v + "/site-packages";
}

} // namespace

python::PythonTarget python_target(const spec::BuildSpec& s, const Base& base) {
  python::PythonTarget t;
  const std::string& arch = s.platform.architecture;
  t.arch = arch == "amd64" ? "x86_64" : arch == "arm64" ? "aarch64" : arch;
  bool need_scan = !s.python || !s.python->glibc || s.python->interpreter.empty();
  BaseInterpreter sc;
  if (need_scan) {
    sc = base_interpreter(base);
  }
  if (s.python) {
    const auto& p = *s.python;
    t.minor = std::stoi(p.version.substr(2));
    t.interpreter =
        p.interpreter.empty() ? (sc.minor == t.minor ? sc.bin_dir : "/usr/bin") + "/python" + p.version : p.interpreter;
    t.site_packages = p.site_packages.empty() ? default_site(t.interpreter, t.minor) : p.site_packages;
    t.scripts_dir = p.scripts_dir.empty() ? "/usr/local/bin" : p.scripts_dir;
    t.prefix = p.prefix.empty() ? "/usr/local" : p.prefix;
    t.glibc = p.glibc ? p.glibc : sc.glibc;
    return t;
  }
  if (sc.minor < 0) {
    throw Error(ErrorKind::input,
                s.file.string() + ": a wheels layer needs the target Python, and base '" + s.base + "' has none",
                "add python: {version: \"3.X\"} to the spec, or use a base image that contains python3.X");
  }
  t.minor = sc.minor;
  t.interpreter = sc.bin_dir + "/python3." + std::to_string(sc.minor);
  t.site_packages = default_site(t.interpreter, t.minor);
  t.scripts_dir = "/usr/local/bin";
  t.prefix = "/usr/local";
  t.glibc = sc.glibc;
  return t;
}

void load_base_view(Base& base, const fs::path& cache_dir, const DebugLog& debug,
                    const std::function<void(const std::string&)>& info) {
  if (!base.digest || base.manifest.layers.empty()) {
    return;
  }
  layers::ViewCacheOptions vo;
  vo.cache_dir = cache_dir;
  vo.store = true;
  vo.what = "base " + base.name;
  vo.info = info;
  vo.debug = [&](const std::string& line) {
    if (debug) {
      debug(line);
    }
  };
  auto open = [&](const oci::Descriptor& d) -> oci::Reader { return base.image->open_blob(d, 0); };
  auto view =
      std::make_shared<layers::BaseView>(layers::cached_view(base.manifest.layers, open, base.config.config.env, vo));
  base.view = std::move(view);
}

namespace {

// A base layer that is not a local file (in a registry, inside a docker-archive) is
// pulled into the layer cache only when something local needs it (a layout or archive
// output); pushes mount or skip registry blobs, and the base view streams them.
void pull_base_layers_on_demand(Base& base, layers::LayerCache& cache, const BuildOptions& o, const Events& ev) {
  // By value but for the cache, which the caller keeps open as long as the base: the
  // build's image reads through this after build() has returned (BuildResult).
  base.local_blob = [&cache, image = base.image, layers = base.manifest.layers, diff_ids = base.config.diff_ids,
                     info = ev.info, progress = o.transfer.progress](const oci::Descriptor& d) -> fs::path {
    if (fs::path file = image->hints(d).file; !file.empty()) {
      return file;
    }
    std::size_t i = 0;
    while (i < layers.size() && layers[i].digest != d.digest) {
      ++i;
    }
    bool rebuilt = false;
    layers::LayerRecord record;
    cache.get_or_build(
        "base-" + d.digest.hex,
        [&](util::AtomicFile& tmp, layers::LayerRecord&) {
          info("pulling base layer " + d.digest.str() + " (" + std::to_string(d.size) + " bytes) into the cache");
          std::int64_t done = 0;
          oci::VerifyingSink verify(d, image->name(), [&](const char* p, std::size_t n) {
            tmp.write(p, n);
            done += static_cast<std::int64_t>(n);
            if (progress) {
              progress(d.digest, done, d.size);
            }
          });
          image->read_blob(d, [&](const char* p, std::size_t n) { verify(p, n); });
          verify.check();
          layers::BlobInfo blob;
          blob.digest = d.digest;
          blob.size = d.size;
          blob.media_type = d.media_type;
          blob.diff_id = i < diff_ids.size() ? diff_ids[i] : d.digest;
          return blob;
        },
        rebuilt, record);
    return cache.blobs().blob_path(d.digest);
  };
}

// The media type of a base view in the registry cache (layers::compress_view's bytes).
std::string view_media_type() {
  return "application/vnd.paddle-image.base-view.v" + std::to_string(layers::BaseView::k_format) + "+zstd";
}

// Beside a base view taken from an unverified registry cache entry: that repository's
// name. Such a view is never stored to a registry cache again, and a build that
// verifies cache entries or signs its image makes the view again from the base's layers.
fs::path unverified_marker(const fs::path& view_file) {
  fs::path m = view_file;
  m += ".unverified";
  return m;
}

// A build that verifies or signs: the local view of an unverified entry goes (the view
// is then taken from a verified entry, or made from the layers).
void drop_unverified_view(const Base& base, const BuildOptions& o, const Events& ev) {
  if (!o.only_verified_cache || !base.digest || base.manifest.layers.empty()) {
    return;
  }
  fs::path file = layers::view_cache_path(o.cache_dir, base.manifest.layers);
  std::error_code ec;
  if (!fs::exists(unverified_marker(file), ec)) {
    return;
  }
  ev.info("the cached file tree of base " + base.name +
          " came from an unverified registry cache entry: made again, since this build verifies cache entries or "
          "signs its image");
  fs::remove(file, ec);
  fs::remove(unverified_marker(file), ec);
}

// On a local miss of the base's view: the view from the registry cache, so the build
// reads no base layer (a push mounts them; only a local output needs their bytes).
void view_from_registry_cache(const Base& base, const BuildOptions& o, const Events& ev) {
  if (!o.remote_cache || !base.digest || base.manifest.layers.empty()) {
    return;
  }
  fs::path file = layers::view_cache_path(o.cache_dir, base.manifest.layers);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    return;
  }
  std::optional<layers::RemoteHit> hit =
      o.remote_cache->fetch(layers::CacheEntryKind::base_view, layers::view_cache_key(base.manifest.layers));
  if (!hit || hit->info.media_type != view_media_type()) {
    return;
  }
  fs::create_directories(file.parent_path(), ec);
  if (!hit->verified) { // written first: a view without its marker would pass for a trusted one
    util::write_file_atomic(unverified_marker(file), hit->registry + "/" + hit->repository + "\n");
  } else {
    fs::remove(unverified_marker(file), ec);
  }
  util::AtomicFile tmp(file);
  o.remote_cache->download(*hit, tmp);
  tmp.commit();
  ev.info("the file tree of base " + base.name + " from the registry cache " + hit->registry + "/" + hit->repository +
          (hit->verified ? " (signature verified)" : ""));
}

// With --cache-to: the base's view (as the local cache holds it) into the registry cache.
void view_to_registry_cache(const Base& base, const BuildOptions& o) {
  if (!o.remote_cache || !o.remote_cache->writes() || !base.digest || base.manifest.layers.empty()) {
    return;
  }
  fs::path file = layers::view_cache_path(o.cache_dir, base.manifest.layers);
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return; // the view came from a shorter cached prefix and was not stored: nothing to share
  }
  if (fs::exists(unverified_marker(file), ec)) {
    return; // an unverified entry's: never stored again (nor signed)
  }
  layers::BlobInfo info;
  info.digest = oci::Digest::sha256(util::sha256_file_hex(file));
  info.diff_id = info.digest;
  info.size = static_cast<std::int64_t>(fs::file_size(file));
  info.media_type = view_media_type();
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& d : base.manifest.layers) {
    layers.push_back(d.digest.str());
  }
  o.remote_cache->store(
      layers::CacheEntryKind::base_view, layers::view_cache_key(base.manifest.layers), info, {{"layers", layers}},
      [file] { return file; }, nullptr);
}

} // namespace

// Opens the spec's base and checks a local one's blobs against their digests.
Base open_build_base(const spec::BuildSpec& s, const BuildOptions& o, layers::LayerCache& cache, const Events& ev) {
  Base base = open_base(s, o.matrix_files, o.connect);
  if (std::size_t hashed = verify_local_base(base, o.cache_dir); hashed > 0) {
    ev.info("verified " + std::to_string(hashed) + " base layer blob(s) of " + base.name + " against their digests");
  }
  if (base.image) {
    pull_base_layers_on_demand(base, cache, o, ev);
  }
  drop_unverified_view(base, o, ev);
  view_from_registry_cache(base, o, ev);
  std::error_code ec;
  const fs::path view =
      base.manifest.layers.empty() ? fs::path() : layers::view_cache_path(o.cache_dir, base.manifest.layers);
  const bool made_here = !view.empty() && !fs::exists(view, ec); // from the layers, by load_base_view
  load_base_view(base, o.cache_dir, ev.debug, ev.info);
  if (made_here) {
    fs::remove(unverified_marker(view), ec);
  }
  view_to_registry_cache(base, o);
  return base;
}

// The base in the report: what `base: auto` chose, its name and digest, its layers.
void report_base(const Base& base, BuildReport& rep, const Events& ev) {
  if (base.resolved) {
    rep.resolution = base.resolved->report;
    ev.info("base: auto chose " + base.resolved->reference + " (" + base.resolved->driver_level +
            " driver compatibility)");
  }
  rep.base_name = base.name;
  rep.base_digest = base.digest;
  ev.info(
      "base " + base.name +
      (base.digest ? " (" + base.digest->str() + ", " + std::to_string(base.manifest.layers.size()) + " layers)" : ""));
  for (std::size_t i = 0; i < base.manifest.layers.size(); ++i) {
    const auto& d = base.manifest.layers[i];
    LayerReport lr;
    lr.name = "base[" + std::to_string(i) + "]";
    lr.kind = "base";
    lr.blob.digest = d.digest;
    lr.blob.diff_id = base.config.diff_ids[i];
    lr.blob.size = d.size;
    lr.blob.media_type = d.media_type;
    rep.layers.push_back(lr);
  }
}

// The Python the wheels are installed for; none without a wheels layer.
std::optional<python::PythonTarget> wheels_target(const spec::BuildSpec& s, const Base& base) {
  bool has_wheels = std::any_of(s.layers.begin(), s.layers.end(),
                                [](const auto& l) { return l.kind == spec::LayerSpec::Kind::wheels; });
  if (!has_wheels) {
    return std::nullopt;
  }
  return python_target(s, base);
}

// "12.0.1" -> "12.0" (the form requires: and the labels use); "" stays "".
std::string major_minor(const std::string& v) {
  auto dot = v.find('.');
  if (dot == std::string::npos) {
    return v;
  }
  auto second = v.find('.', dot + 1);
  return v.substr(0, second);
}

// A value from the base, as a build line may show it: escaped, and cut when long.
std::string shown_value(const std::string& v) {
  std::string e = util::escape_bytes(v.size() > 40 ? v.substr(0, 40) : v);
  for (std::string_view sep : {std::string_view("\u2028"), std::string_view("\u2029")}) {
    for (auto at = e.find(sep); at != std::string::npos; at = e.find(sep)) {
      e.replace(at, sep.size(), sep == "\u2028" ? "\\u2028" : "\\u2029");
    }
  }
  return "'" + e + (v.size() > 40 ? "...' (" + std::to_string(v.size()) + " bytes)" : "'");
}

std::map<std::string, BaseFact> base_facts(const Base& base, const Events& ev) {
  std::map<std::string, BaseFact> out;
  if (!base.view) {
    return out;
  }
  // Only what the readers of the labels (doctor --image, render) accept becomes a fact:
  // a base whose ENV or METADATA states something else is not believed, and the build
  // says so, instead of writing a label that makes the image unreadable later.
  auto put = [&](const std::string& key, const std::string& value, const std::string& source, bool valid) {
    if (!valid) {
      ev.info("  warning: the base states " + key + " " + shown_value(value) + " (" + source +
              "), which is not a version: ignored");
      return;
    }
    out[key] = {value, source};
  };
  const auto& f = base.view->facts();
  if (!f.cuda.empty()) {
    std::string v = major_minor(f.cuda);
    put("cuda.version", v, f.cuda_source, compat::is_plain_version(v));
  }
  if (!f.cudnn.empty()) {
    std::string v = major_minor(f.cudnn);
    put("cudnn.version", v, f.cudnn_source, compat::is_plain_version(v));
  }
  for (const auto& d : python::installed_distributions(*base.view)) {
    std::string key = python::normalize_project_name(d.name);
    if (key == "paddlepaddle-gpu" || key == "paddlepaddle") {
      auto v = python::pep440::Version::parse(d.version);
      std::string version = v ? v->public_str() : d.version;
      put("paddle.version", version, "/" + d.location, compat::is_paddle_version(version));
    }
  }
  // The interpreter a wheels layer would install for (python_target's choice).
  BaseInterpreter py = base_interpreter(base);
  if (py.minor >= 0) {
    out["python.version"] = {"3." + std::to_string(py.minor), py.bin_dir + "/python3." + std::to_string(py.minor)};
  }
  return out;
}

// requires: fills in only what the base cannot tell: a value the base states otherwise
// is an input error naming both (a CUDA 12.0 base is not made CUDA 11.8 by a label).
void check_requires_against_base(const spec::BuildSpec& s, const std::map<std::string, BaseFact>& facts) {
  const auto& req = s.requires_;
  for (const auto& [key, want, field] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"cuda.version", req.cuda, "cuda"},
                                                                      {"cudnn.version", req.cudnn, "cudnn"},
                                                                      {"paddle.version", req.paddle, "paddle"}}) {
    auto it = facts.find(key);
    if (want.empty() || it == facts.end() || it->second.value == want) {
      continue;
    }
    throw Error(ErrorKind::input,
                s.file.filename().string() + ": requires." + field + " is \"" + want + "\", but the base states " +
                    it->second.value + " (" + it->second.source + ")",
                "remove requires." + field + " (the base's value is recorded), or choose a base with " + field + " " +
                    want);
  }
}

// ---- The base's facts for the image's labels and the Python target -----------------

namespace {

// The full version of the base's python3.N from its dpkg entry ("3.11.2"), "" when the
// base has none.
std::string dpkg_python_version(const Base& base, int minor) {
  if (!base.view) {
    return {};
  }
  std::string want = "python3." + std::to_string(minor);
  for (const auto& p : base.view->facts().dpkg) {
    if (p.name == want || p.name == want + "-minimal") {
      std::string v = p.version.substr(p.version.find(':') == std::string::npos ? 0 : p.version.find(':') + 1);
      v = v.substr(0, v.find_first_of("-+~"));
      return v.rfind("3." + std::to_string(minor), 0) == 0 ? v : std::string();
    }
  }
  return {};
}

// The base's facts, from the matrix's row for it (a base chosen by `base: auto`, or a
// published Paddle image the matrix knows), then what the base itself states, which
// wins: the build says where each came from, and when the two disagree.
compat::ImageFacts row_and_stated_facts(const Base& base, const std::map<std::string, BaseFact>& facts,
                                        const Events& ev) {
  compat::ImageFacts f;
  const ResolvedBase* row = base.resolved ? &*base.resolved : base.published ? &*base.published : nullptr;
  if (base.published) {
    ev.info("  " + base.published->reference + " is a published Paddle image the compatibility matrix knows (" +
            base.published->origin + "): its row gives the driver, the GPU architectures and what the base " +
            "does not state");
  }
  if (row != nullptr) {
    f.cuda = row->cuda;
    f.cudnn = row->cudnn;
    f.tensorrt = row->tensorrt;
    f.paddle = row->paddle;
    f.driver_min = row->driver_full;
    f.driver_min_compat = row->driver_minor;
    f.archs = row->archs;
  }
  const std::map<std::string, std::string*> stated = {{"cuda.version", &f.cuda},
                                                      {"cudnn.version", &f.cudnn},
                                                      {"paddle.version", &f.paddle},
                                                      {"python.version", &f.python}};
  for (const auto& [key, fact] : facts) {
    auto field = stated.find(key);
    if (field == stated.end()) {
      continue;
    }
    if (row != nullptr && !field->second->empty() && *field->second != fact.value) {
      ev.info("  warning: the base states " + key + " " + fact.value + " (" + fact.source +
              "); the compatibility matrix says " + *field->second + " for " + row->reference +
              ": the base's is recorded");
    }
    ev.info("  io.paddle-image." + key + " = " + fact.value + " (from the base: " + fact.source + ")");
    *field->second = fact.value;
  }
  return f;
}

// The driver floor follows the CUDA the image has: the one the base states (else its
// NVIDIA_REQUIRE_CUDA, "cuda>=12.0 brand=tesla,..."), through the matrix's driver for
// that CUDA. True when the matrix knows that CUDA (its minor-compat floor is then the
// matrix's, none included).
bool set_driver_from_cuda(const Base& base, const std::map<std::string, BaseFact>& facts, const Events& ev,
                          compat::ImageFacts& f) {
  std::string cuda, cuda_from;
  if (auto it = facts.find("cuda.version"); it != facts.end()) {
    cuda = it->second.value;
    cuda_from = it->second.source;
  } else {
    std::string req = base.config.get_env("NVIDIA_REQUIRE_CUDA").value_or("");
    if (auto at = req.find("cuda>="); at != std::string::npos) {
      std::string v = req.substr(at + 6);
      cuda = major_minor(v.substr(0, v.find_first_of(" ,")));
      cuda_from = "ENV NVIDIA_REQUIRE_CUDA";
    }
  }
  const compat::CudaRow* c = cuda.empty() || !base.matrix ? nullptr : base.matrix->find_cuda(cuda);
  if (c == nullptr || !c->released) {
    return false;
  }
  if (f.driver_min != c->driver_full) {
    ev.info("  io.paddle-image.driver.min = " + c->driver_full + " (the compatibility matrix's driver for CUDA " +
            c->version + ", " + c->origin + "; the CUDA from the base: " + cuda_from + ")");
  }
  f.driver_min = c->driver_full;
  f.driver_min_compat = c->driver_minor;
  return true;
}

} // namespace

BaseCompatFacts base_compat_facts(const Base& base, const std::map<std::string, BaseFact>& facts, const Events& ev) {
  BaseCompatFacts out;
  out.facts = row_and_stated_facts(base, facts, ev);
  out.cuda_known = set_driver_from_cuda(base, facts, ev, out.facts);
  return out;
}

// Said where the target's facts are used for selection: markers on python_full_version
// are evaluated as 3.N.0 when the base has no dpkg entry for its Python.
void warn_if_no_dpkg_python(const Base& base, const python::PythonTarget& t, const Events& ev) {
  if (dpkg_python_version(base, t.minor).empty()) {
    ev.info("  warning: the base has no dpkg entry for python3." + std::to_string(t.minor) +
            "; environment markers on python_full_version are evaluated as 3." + std::to_string(t.minor) + ".0");
  }
}

// The Python facts of the target for selection and the closure check: the full
// version from the base's dpkg entry for python3.N (else 3.N.0) and the Python
// distributions the base already has.
python::TargetFacts base_target_facts(const Base& base, const python::PythonTarget& t) {
  std::map<std::string, std::string> dists;
  std::map<std::string, std::vector<std::string>> requires_dist;
  if (base.view) {
    // What the target interpreter sees, not every environment in the base.
    for (const auto& d : python::target_distributions(*base.view, t, python::installed_distributions(*base.view))) {
      dists[python::normalize_project_name(d.name)] = d.version;
      requires_dist[python::normalize_project_name(d.name)] = d.requires_dist;
    }
  }
  std::string full = dpkg_python_version(base, t.minor);
  if (full.empty()) {
    full = "3." + std::to_string(t.minor) + ".0";
  }
  python::TargetFacts facts = python::target_facts(t, full, std::move(dists));
  facts.base_requires = std::move(requires_dist);
  return facts;
}

} // namespace builder
