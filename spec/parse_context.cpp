#include "spec/parse_context.hpp"

#include "oci/image.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>

namespace spec::detail {

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char ch) {
    auto u = static_cast<unsigned char>(ch);
    return u < 0x20 || u == 0x7f;
  });
}

void check_image_path(const Ctx& c, const YAML::Node& n, const std::string& field, const std::string& p) {
  if (has_control(p)) {
    c.fail(n, field, "'" + util::escape_bytes(p) + "' holds a control character (NUL, newline, ...)",
           "image paths are plain text; remove the escape from the YAML string");
  }
  if (p.empty() || p.front() != '/') {
    c.fail(n, field, "'" + p + "' must be an absolute path inside the image", "e.g. /app/ or /opt/models/");
  }
  int depth = 0;
  std::size_t i = 0;
  while (i <= p.size()) {
    auto j = p.find('/', i);
    std::string comp = p.substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (comp == "..") {
      if (--depth < 0) {
        c.fail(n, field, "'" + p + "' escapes the image root", "remove the '..' components");
      }
    } else if (!comp.empty() && comp != ".") {
      ++depth;
    }
    if (comp.size() > 255) {
      c.fail(n, field,
             "'" + util::escape_bytes(p.substr(0, 60)) + "...' has a path component of " + std::to_string(comp.size()) +
                 " bytes; no file system holds a name longer than 255",
             "shorten that directory or file name");
    }
    if (j == std::string::npos) {
      break;
    }
    i = j + 1;
  }
}

fs::path source_path(const Ctx& c, const YAML::Node& n, const std::string& field, const fs::path& dir,
                     bool must_exist) {
  std::string s = c.str(n, field);
  if (has_control(s)) {
    c.fail(n, field, "'" + util::escape_bytes(s) + "' holds a control character (NUL, newline, ...)",
           "remove the escape from the YAML string");
  }
  fs::path p = fs::path(s).is_absolute() ? fs::path(s) : dir / s;
  p = p.lexically_normal();
  std::error_code ec;
  if (must_exist && !fs::exists(fs::symlink_status(p, ec))) {
    c.fail(n, field, "source '" + s + "' does not exist (looked for " + p.string() + ")",
           "paths are relative to the directory of the spec file");
  }
  return p;
}

CompressionSpec compression(const Ctx& c, const YAML::Node& n, const std::string& field,
                            const CompressionSpec* inherited) {
  CompressionSpec cs;
  std::string name = oci::compression_name(inherited != nullptr ? inherited->format : cs.format);
  int level = 0;
  if (n.IsScalar() && n.Scalar() == "gpu-node") {
    name = "zstd";
    level = k_gpu_node_zstd_level;
    cs.format_set = true;
  } else if (n.IsScalar()) {
    name = n.Scalar();
    cs.format_set = true;
  } else {
    c.check_keys(n, field, {"format", "level"});
    if (n["format"]) {
      name = c.str(n["format"], field + ".format");
      cs.format_set = true;
    }
    if (n["level"]) {
      level = static_cast<int>(c.integer(n["level"], field + ".level"));
    }
  }
  std::optional<oci::Compression> format = oci::parse_compression(name);
  if (!format) {
    c.fail(n, field, "unknown compression '" + name + "'",
           "use gzip, zstd or none, or gpu-node (zstd level " + std::to_string(k_gpu_node_zstd_level) +
               ", the setting for images GPU nodes pull)");
  }
  cs.format = *format;
  int max = oci::max_level(cs.format);
  if (level < 0 || level > max) {
    c.fail(n["level"] ? n["level"] : n, field + ".level", "level " + std::to_string(level) + " is out of range",
           cs.format == oci::Compression::none ? "'none' takes no level" : "use 1-" + std::to_string(max));
  }
  cs.level = level == 0 ? oci::default_level(cs.format) : level;
  return cs;
}

bool boolean(const Ctx& c, const YAML::Node& v, const std::string& field) {
  if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
    c.fail(v, field, "must be true or false");
  }
  return v.Scalar() == "true";
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(p, ec);
  return ec ? p : r;
}

// Where `from` really is (symlinks resolved) relative to the spec directory (also
// resolved); nullopt when it lies outside.
std::optional<std::string> inside_spec_dir(const fs::path& from, const fs::path& dir) {
  fs::path rel = resolved(from).lexically_relative(resolved(dir));
  if (rel.empty() || *rel.begin() == "..") {
    return std::nullopt;
  }
  std::string r = rel.generic_string();
  return r == "." ? std::string{} : r;
}

// `split: 256Mi` (a byte quantity, at least 1Mi) or `split: none` / 0.
std::uint64_t split_size(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::string text = c.str(n, field);
  if (text == "none" || text == "0") {
    return 0;
  }
  auto bytes = util::parse_byte_quantity(text);
  if (!bytes) {
    c.fail(n, field, "'" + util::escape_bytes(text) + "' is not a size",
           "write bytes with a suffix, e.g. 256Mi (or none for one layer)");
  }
  if (*bytes < k_min_split_bytes) {
    c.fail(n, field, "'" + util::escape_bytes(text) + "' is below 1Mi",
           "parts of 128Mi-512Mi suit GPU nodes (docs/spec.md, Settings for GPU nodes)");
  }
  return *bytes;
}

} // namespace spec::detail
