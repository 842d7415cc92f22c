#include "oci/image.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

#include <set>

namespace oci {

using util::Error;
using util::ErrorKind;

Descriptor ManifestBlob::descriptor() const {
  return Descriptor{media_type, digest, static_cast<std::int64_t>(bytes.size()), {}, {}};
}

bool ManifestBlob::is_index() const {
  return is_index_media_type(media_type);
}

bool is_index_media_type(const std::string& media_type) {
  return media_type == media::k_index || media_type == media::k_docker_index;
}

std::string sniff_media_type(const std::string& bytes) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return media::k_manifest;
  }
  if (j.contains("mediaType") && j["mediaType"].is_string()) {
    return j["mediaType"].get<std::string>();
  }
  return j.contains("manifests") ? media::k_index : media::k_manifest;
}

ManifestBlob manifest_blob(std::string bytes, const std::string& media_type) {
  ManifestBlob m;
  m.media_type = media_type.empty() ? sniff_media_type(bytes) : media_type;
  m.digest = Digest::sha256(util::sha256_hex(bytes));
  m.bytes = std::move(bytes);
  return m;
}

void Image::read_blob(const Descriptor& d, const Sink& sink) const {
  Reader r = open_blob(d, 0);
  std::vector<char> buf(1 << 20);
  for (;;) {
    std::size_t n = r(buf.data(), buf.size());
    if (n == 0) {
      return;
    }
    sink(buf.data(), n);
  }
}

BlobHints Image::hints(const Descriptor&) const {
  return {};
}

std::vector<Attachment> Image::attachments(const Digest&) const {
  return {};
}

std::vector<Descriptor> image_blobs(const ManifestBlob& m, const std::string& name) {
  nlohmann::json j = parse_json(m.bytes, "manifest of " + name);
  std::vector<Descriptor> out;
  std::set<std::string> seen;
  auto add = [&](const nlohmann::json& dj) {
    Descriptor d = descriptor_from_json(dj);
    if (dj.contains("urls") || !seen.insert(d.digest.str()).second) {
      return; // foreign layers stay where their URLs point
    }
    out.push_back(d);
  };
  try {
    add(j.at("config"));
    for (const auto& l : j.at("layers")) {
      add(l);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::input, "manifest of " + name + " is not an image manifest: " + e.what());
  }
  return out;
}

std::vector<Descriptor> index_children(const ManifestBlob& m, const std::string& name) {
  return index_from_json(parse_json(m.bytes, "index of " + name)).manifests;
}

std::string read_small_blob(const Image& img, const Descriptor& d, std::int64_t max_size) {
  if (d.size > max_size) {
    throw Error(ErrorKind::input, img.name() + ": blob " + d.digest.str() + " is too large to be a config (" +
                                      std::to_string(d.size) + " bytes)");
  }
  std::string bytes;
  VerifyingSink v(d, img.name(), [&](const char* p, std::size_t n) {
    if (static_cast<std::int64_t>(bytes.size() + n) > max_size) {
      throw Error(ErrorKind::integrity, img.name() + ": blob " + d.digest.str() + " is larger than its descriptor");
    }
    bytes.append(p, n);
  });
  img.read_blob(d, [&](const char* p, std::size_t n) { v(p, n); });
  v.check();
  return bytes;
}

ImageConfig read_config(const Image& img, const Manifest& m) {
  return config_from_json(parse_json(read_small_blob(img, m.config), "config of " + img.name()));
}

std::string platform_str(const Platform& p) {
  return p.os + "/" + p.architecture + (p.variant.empty() ? "" : "/" + p.variant);
}

Platform parse_platform(const std::string& text, const std::string& what) {
  auto a = text.find('/');
  if (a == std::string::npos || a == 0 || a + 1 >= text.size() || text.find_first_of(" \t") != std::string::npos) {
    throw Error(ErrorKind::usage, what + " '" + text + "' is not OS/ARCH[/VARIANT]",
                "e.g. linux/amd64 or linux/arm64/v8");
  }
  Platform p;
  p.os = text.substr(0, a);
  auto b = text.find('/', a + 1);
  p.architecture = text.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (b != std::string::npos) {
    p.variant = text.substr(b + 1);
    if (p.variant.empty() || p.variant.find('/') != std::string::npos || p.architecture.empty()) {
      throw Error(ErrorKind::usage, what + " '" + text + "' is not OS/ARCH[/VARIANT]",
                  "e.g. linux/amd64 or linux/arm64/v8");
    }
  }
  return p;
}

bool platform_matches(const Platform& have, const Platform& want) {
  return have.os == want.os && have.architecture == want.architecture &&
         (want.variant.empty() || have.variant == want.variant);
}

namespace {

ManifestBlob child(const Image& img, const Descriptor& d) {
  ManifestBlob m = img.manifest(d);
  if (m.digest != d.digest) {
    throw Error(ErrorKind::integrity, img.name() + ": manifest " + d.digest.str() + " does not match its digest");
  }
  return m;
}

} // namespace

ManifestBlob select_platform(const Image& img, const CopyOptions& opt) {
  const ManifestBlob& root = img.root();
  const Platform& p = opt.platform;
  if (!root.is_index()) {
    if (opt.platform_explicit) {
      Manifest m = manifest_from_json(parse_json(root.bytes, "manifest of " + img.name()));
      ImageConfig cfg = read_config(img, m);
      Platform have{cfg.architecture, cfg.os, cfg.variant};
      if (!platform_matches(have, p)) {
        throw Error(ErrorKind::incompatible,
                    img.name() + " has no image for " + platform_str(p) + " (it is a single-platform image for " +
                        platform_str(have) + ")",
                    "drop --platform, or use --platform " + platform_str(have));
      }
    }
    return root;
  }
  std::vector<std::string> seen;
  for (const auto& d : index_children(root, img.name())) {
    if (!d.platform) {
      continue;
    }
    seen.push_back(platform_str(*d.platform));
    if (platform_matches(*d.platform, p)) {
      return child(img, d);
    }
  }
  throw Error(ErrorKind::incompatible,
              img.name() + " has no image for " + platform_str(p) +
                  (seen.empty() ? "" : " (it has " + util::join(seen, ", ") + ")"),
              "choose one with --platform, or copy all with --all");
}

CopyPlan plan_copy(const Image& img, const CopyOptions& opt) {
  CopyPlan p;
  if (opt.all_platforms && img.root().is_index()) {
    p.top = img.root();
    for (const auto& d : index_children(p.top, img.name())) {
      p.images.push_back(child(img, d));
    }
  } else {
    p.top = select_platform(img, opt);
    p.images.push_back(p.top);
  }
  if (!opt.attachments) {
    return p;
  }
  std::set<std::string> subjects{p.top.digest.str()};
  for (const auto& m : p.images) {
    subjects.insert(m.digest.str());
  }
  std::set<std::string> taken;
  for (const auto& s : subjects) {
    for (const Attachment& a : img.attachments(Digest::parse(s))) {
      if (!taken.insert(a.descriptor.digest.str() + "\n" + a.tag).second) {
        continue;
      }
      ManifestBlob m = child(img, a.descriptor);
      if (m.is_index()) {
        // The referrers fallback index: its children travel first, untagged.
        for (const auto& c : index_children(m, img.name())) {
          if (taken.insert(c.digest.str() + "\n").second) {
            p.attached.push_back({Attachment{c, ""}, child(img, c)});
          }
        }
      }
      p.attached.push_back({a, std::move(m)});
    }
  }
  return p;
}

VerifyingSink::VerifyingSink(const Descriptor& d, std::string what, Sink next)
    : m_desc(d), m_what(std::move(what)), m_next(std::move(next)) {}

void VerifyingSink::operator()(const char* data, std::size_t len) {
  m_hash.update(data, len);
  m_bytes += static_cast<std::int64_t>(len);
  if (m_next) {
    m_next(data, len);
  }
}

void VerifyingSink::check() {
  std::string hex = m_hash.finish_hex();
  if (m_bytes != m_desc.size || (m_desc.digest.algorithm == "sha256" && hex != m_desc.digest.hex)) {
    throw Error(ErrorKind::integrity,
                m_what + ": read content for " + m_desc.digest.str() + " that does not match it (" +
                    std::to_string(m_bytes) + " bytes hashing to sha256:" + hex + ", expected " +
                    std::to_string(m_desc.size) + " bytes); nothing was stored",
                "the source, the registry or a proxy corrupted the blob; try again, or fetch or build it anew");
  }
}

} // namespace oci
