#include "builder/base.hpp"

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
  auto ns = [](const struct timespec& ts) { return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec; };
  return {{"dev", static_cast<std::uint64_t>(st.st_dev)},
          {"ino", static_cast<std::uint64_t>(st.st_ino)},
          {"size", static_cast<std::int64_t>(st.st_size)},
          {"mtime_ns", ns(st.st_mtim)},
          {"ctime_ns", ns(st.st_ctim)}};
}

// A registry base: the platform's manifest and the config, nothing else.
void open_registry_base(Base& b, const spec::BuildSpec& s, const oci::ImageRef& ref, const Connect& connect,
                        const std::string& where) {
  if (!connect) {
    throw Error(ErrorKind::usage, where + ": base " + ref.str() + " is in a registry, which this command cannot reach",
                "use paddle-image build, or copy the base into a local layout");
  }
  open_image_base(b, s, open_source(ref, connect));
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

Base open_base_itself(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix, const Connect& connect) {
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
      open_image_base(b, s, open_source(ref, connect));
    });
    b.resolved = rb;
    return b;
  }
  oci::ImageRef ref = oci::ImageRef::parse(s.base_resolved.empty() ? s.base : s.base_resolved);
  if (ref.kind == oci::ImageRef::Kind::registry) {
    util::with_context("base " + ref.str(), [&] { open_registry_base(b, s, ref, connect, where); });
    return b;
  }
  util::with_context("base " + s.base, [&] { open_image_base(b, s, open_source(ref, connect)); });
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

Base open_base(const spec::BuildSpec& s, const std::vector<std::string>& extra_matrix, const Connect& connect) {
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
  fs::path dir = cache_dir / "base-info" / "blobs";
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
    fs::path record = dir / (layer.digest.hex + ".json");
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
  fs::path dir = cache_dir / "base-info" / "blobs";
  for (const auto& layer : base.manifest.layers) {
    fs::path record = dir / (layer.digest.hex + ".json");
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

} // namespace builder
