#include "warm/verify.hpp"

#include "imageio/source.hpp"
#include "oci/reference.hpp"
#include "registry/error.hpp"
#include "registry/transfer.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"

#include <atomic>
#include <set>

namespace warm {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

util::ErrorKind VerifyReport::failure_kind() const {
  return corrupt > 0 ? ErrorKind::integrity : ErrorKind::incomplete;
}

std::string VerifyReport::summary() const {
  std::string s = target + ": " + std::to_string(ok) + " blob(s) ok";
  if (missing > 0) {
    s += ", " + std::to_string(missing) + " missing";
  }
  if (corrupt > 0) {
    s += ", " + std::to_string(corrupt) + " corrupt";
  }
  return s;
}

nlohmann::json to_json(const VerifyReport& r) {
  nlohmann::json blobs = nlohmann::json::array();
  for (const auto& b : r.blobs) {
    nlohmann::json j = {{"digest", b.desc.digest.str()},
                        {"size", b.desc.size},
                        {"kind", b.kind},
                        {"status", b.status == BlobStatus::ok        ? "ok"
                                   : b.status == BlobStatus::missing ? "missing"
                                                                     : "corrupt"}};
    if (!b.detail.empty()) {
      j["detail"] = b.detail;
    }
    blobs.push_back(j);
  }
  return {{"target", r.target},   {"digest", r.digest.str()}, {"passed", r.passed()},       {"ok", r.ok},
          {"missing", r.missing}, {"corrupt", r.corrupt},     {"bytes_read", r.bytes_read}, {"blobs", blobs}};
}

namespace {

// A directory of blobs/<alg>/<hex> as an image source: every manifest and blob is
// read from its file and hashed by whoever reads it. A file that is not there is
// Error(incomplete).
class ContentDirImage : public oci::Image {
public:
  ContentDirImage(fs::path dir, const oci::Digest& top) : m_dir(std::move(dir)), m_name("content " + m_dir.string()) {
    oci::Descriptor d;
    d.digest = top;
    d.size = file_size(top);
    m_root = manifest(d);
  }
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor& d) const override {
    if (file_size(d.digest) > (16 << 20)) {
      throw Error(ErrorKind::integrity, m_name + ": manifest " + d.digest.str() + " is larger than 16 MiB");
    }
    std::string bytes = util::read_file(path(d.digest));
    std::string hex = util::sha256_hex(bytes);
    if (d.digest.algorithm != "sha256" || hex != d.digest.hex) {
      throw Error(ErrorKind::integrity,
                  m_name + ": the file of manifest " + d.digest.str() + " hashes to sha256:" + hex);
    }
    return oci::manifest_blob(std::move(bytes), d.media_type);
  }
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override {
    file_size(d.digest); // missing: Error(incomplete)
    return util::file_reader(path(d.digest), offset);
  }

private:
  fs::path path(const oci::Digest& d) const { return m_dir / "blobs" / d.algorithm / d.hex; }
  std::int64_t file_size(const oci::Digest& d) const {
    std::error_code ec;
    auto n = fs::file_size(path(d), ec);
    if (ec) {
      throw Error(ErrorKind::incomplete, m_name + " has no " + d.str() + " (" + path(d).string() + ")");
    }
    return static_cast<std::int64_t>(n);
  }

  fs::path m_dir;
  std::string m_name;
  oci::ManifestBlob m_root;
};

// Reads and checks everything an image needs, recording each blob's fate.
class Walker {
public:
  Walker(const oci::Image& img, const oci::CopyOptions& opt, VerifyReport& rep) : m_img(img), m_opt(opt), m_rep(rep) {}

  // Runs f; a missing or corrupt read is recorded against desc and false returned.
  template <typename F> bool attempt(const oci::Descriptor& desc, const std::string& kind, F&& f, BlobCheck& out) {
    out.desc = desc;
    out.kind = kind;
    try {
      f();
      out.status = BlobStatus::ok;
      return true;
    } catch (const registry::RegistryError& e) {
      if (e.status() != 404) {
        throw;
      }
      out.status = BlobStatus::missing;
      out.detail = e.what();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::incomplete) {
        out.status = BlobStatus::missing;
      } else if (e.kind() == ErrorKind::integrity) {
        out.status = BlobStatus::corrupt;
      } else {
        throw;
      }
      out.detail = e.what();
    }
    return false;
  }

  void record(BlobCheck c) {
    switch (c.status) {
    case BlobStatus::ok:
      ++m_rep.ok;
      break;
    case BlobStatus::missing:
      ++m_rep.missing;
      break;
    case BlobStatus::corrupt:
      ++m_rep.corrupt;
      break;
    }
    m_rep.blobs.push_back(std::move(c));
  }

  // A manifest (already read and verified) and everything below it.
  void walk(const oci::ManifestBlob& m, bool attachment) {
    if (m.is_index()) {
      std::vector<oci::Descriptor> children = oci::index_children(m, m_img.name());
      bool any = false;
      std::vector<std::string> seen;
      for (const auto& c : children) {
        bool wanted =
            m_opt.all_platforms || attachment || (c.platform && oci::platform_matches(*c.platform, m_opt.platform));
        if (c.platform) {
          seen.push_back(oci::platform_str(*c.platform));
        }
        if (!wanted || (any && !m_opt.all_platforms && !attachment)) {
          continue;
        }
        any = true;
        visit_manifest(c, attachment);
      }
      if (!any && !attachment) {
        throw Error(ErrorKind::incompatible,
                    m_img.name() + ": the index " + m.digest.str() + " has no image for " +
                        oci::platform_str(m_opt.platform) +
                        (seen.empty() ? "" : " (it has " + util::join(seen, ", ") + ")"),
                    "choose one with --platform, or check all with --all");
      }
      return;
    }
    std::vector<oci::Descriptor> blobs = oci::image_blobs(m, m_img.name());
    std::vector<BlobCheck> checks(blobs.size());
    std::atomic<std::int64_t> bytes{0};
    util::parallel_for(blobs.size(), m_opt.jobs, [&](std::size_t i) {
      const oci::Descriptor& d = blobs[i];
      std::string kind = attachment ? "attachment" : i == 0 ? "config" : "layer";
      attempt(
          d, kind,
          [&] {
            oci::VerifyingSink v(d, m_img.name(), {});
            m_img.read_blob(d, [&](const char* p, std::size_t n) {
              if (v.bytes() + static_cast<std::int64_t>(n) > d.size) {
                throw Error(ErrorKind::integrity, m_img.name() + ": " + d.digest.str() + " holds more than its " +
                                                      std::to_string(d.size) + " bytes");
              }
              v(p, n);
              if (m_opt.progress) {
                m_opt.progress(d.digest, v.bytes(), d.size);
              }
            });
            bytes += v.bytes();
            v.check();
          },
          checks[i]);
    });
    m_rep.bytes_read += bytes;
    for (auto& c : checks) {
      record(std::move(c));
    }
  }

  void visit_manifest(const oci::Descriptor& d, bool attachment) {
    if (!m_seen.insert(d.digest.str()).second) {
      return;
    }
    oci::ManifestBlob m;
    BlobCheck c;
    bool ok = attempt(
        d,
        attachment                               ? "attachment"
        : oci::is_index_media_type(d.media_type) ? "index"
                                                 : "manifest",
        [&] {
          m = m_img.manifest(d);
          if (m.digest != d.digest) {
            throw Error(ErrorKind::integrity, m_img.name() + ": manifest " + d.digest.str() + " does not match it");
          }
        },
        c);
    if (ok) {
      c.kind = attachment ? "attachment" : m.is_index() ? "index" : "manifest";
      m_rep.bytes_read += static_cast<std::int64_t>(m.bytes.size());
    }
    record(std::move(c));
    if (ok) {
      walk(m, attachment);
    }
  }

  void run_root(bool attachments) {
    const oci::ManifestBlob& root = m_img.root();
    m_seen.insert(root.digest.str());
    BlobCheck c;
    c.desc = root.descriptor();
    c.kind = root.is_index() ? "index" : "manifest";
    m_rep.bytes_read += static_cast<std::int64_t>(root.bytes.size());
    record(std::move(c));
    walk(root, false);
    if (!attachments) {
      return;
    }
    std::set<std::string> subjects{root.digest.str()};
    for (const auto& b : m_rep.blobs) {
      if (b.kind == "manifest" && b.status == BlobStatus::ok) {
        subjects.insert(b.desc.digest.str());
      }
    }
    for (const auto& s : subjects) {
      for (const oci::Attachment& a : m_img.attachments(oci::Digest::parse(s))) {
        visit_manifest(a.descriptor, true);
      }
    }
  }

private:
  const oci::Image& m_img;
  const oci::CopyOptions& m_opt;
  VerifyReport& m_rep;
  std::set<std::string> m_seen;
};

} // namespace

VerifyReport verify_registry(const std::shared_ptr<registry::Registry>& reg, const std::string& repo,
                             const std::string& reference, const oci::CopyOptions& opt) {
  VerifyReport rep;
  rep.target = "registry " + reg->host() + "/" + repo;
  oci::ImageRef ref;
  ref.kind = oci::ImageRef::Kind::registry;
  ref.registry = reg->host();
  ref.repository = repo;
  bool by_digest = reference.rfind("sha256:", 0) == 0;
  (by_digest ? ref.digest : ref.tag) = reference;
  oci::ImagePtr img;
  try {
    img = imageio::open_source(ref, [&reg](const std::string&) { return reg; });
  } catch (const registry::RegistryError& e) {
    if (e.status() != 404) {
      throw;
    }
    BlobCheck c;
    c.kind = "manifest";
    c.status = BlobStatus::missing;
    c.detail = e.what();
    if (by_digest) {
      c.desc.digest = oci::Digest::parse(reference);
      rep.digest = c.desc.digest;
    }
    rep.blobs.push_back(c);
    rep.missing = 1;
    return rep;
  }
  rep.digest = img->root().digest;
  Walker(*img, opt, rep).run_root(opt.attachments);
  return rep;
}

VerifyReport verify_content_dir(const fs::path& dir, const oci::Digest& digest, const oci::CopyOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(dir / "blobs", ec)) {
    throw Error(ErrorKind::input, "--content-dir " + dir.string() + " has no blobs/ directory",
                "name containerd's content store (/var/lib/containerd/io.containerd.content.v1.content) or an OCI "
                "layout directory");
  }
  VerifyReport rep;
  rep.target = "content " + dir.string();
  rep.digest = digest;
  std::unique_ptr<ContentDirImage> img;
  BlobCheck root;
  root.desc.digest = digest;
  root.kind = "manifest";
  try {
    img = std::make_unique<ContentDirImage>(dir, digest);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::incomplete && e.kind() != ErrorKind::integrity) {
      throw;
    }
    root.status = e.kind() == ErrorKind::incomplete ? BlobStatus::missing : BlobStatus::corrupt;
    root.detail = e.what();
    rep.blobs.push_back(root);
    (root.status == BlobStatus::missing ? rep.missing : rep.corrupt) = 1;
    return rep;
  }
  oci::CopyOptions o = opt;
  Walker(*img, o, rep).run_root(false); // a node's store keeps no signatures
  return rep;
}

void check_one_store(const std::string& registry, const std::string& content_dir) {
  if (registry.empty() == content_dir.empty()) {
    throw Error(ErrorKind::usage, "warm verify needs one of --registry URL or --content-dir DIR",
                "--registry checks a mirror; --content-dir a node's content store or an OCI layout");
  }
}

oci::Digest content_dir_digest(const std::string& image) {
  if (image.rfind("sha256:", 0) == 0) {
    return util::with_context("IMAGE", [&] { return oci::Digest::parse(image); });
  }
  oci::ImageRef ref = util::with_context("IMAGE", [&] { return oci::ImageRef::parse(image); });
  if (ref.kind != oci::ImageRef::Kind::registry || ref.digest.empty()) {
    throw Error(ErrorKind::usage,
                "--content-dir needs IMAGE pinned by digest, and '" + image +
                    "' names a tag: a content store keeps blobs, not tags",
                "use REG/REPO@sha256:... (paddle-image inspect " + image +
                    " --json prints the digest), or check a registry with --registry");
  }
  return oci::Digest::parse(ref.digest);
}

bool resolves_upstream(const oci::ImageRef& ref, const std::string& host) {
  return ref.digest.empty() && host != ref.registry;
}

oci::Digest upstream_digest(const std::shared_ptr<registry::Registry>& upstream, const oci::ImageRef& ref) {
  auto d =
      util::with_context("resolving " + ref.str(), [&] { return upstream->head_manifest(ref.repository, ref.tag); });
  if (!d) {
    throw Error(ErrorKind::registry, ref.str() + ": no such tag upstream",
                "check the tag, or give IMAGE@sha256:... to check the mirror by digest");
  }
  return d->digest;
}

std::string failure_message(const VerifyReport& r, const std::string& image) {
  std::string msg = r.summary() + " for " + image + " (" + r.digest.str() + ")";
  for (const auto& b : r.blobs) {
    if (b.status != BlobStatus::ok) {
      msg += "\n  " + std::string(b.status == BlobStatus::missing ? "missing " : "corrupt ") + b.kind + " " +
             (b.desc.digest.empty() ? std::string("(manifest)") : b.desc.digest.str()) +
             (b.detail.empty() ? "" : ": " + b.detail);
    }
  }
  return msg;
}

std::string failure_hint(ErrorKind kind) {
  return kind == ErrorKind::integrity
             ? "a corrupt blob must be deleted from the store and fetched again (warm push --to, or ctr "
               "images import of a full archive)"
             : "warm it first: paddle-image warm push --to (a mirror) or warm export + ctr images import "
               "(a node)";
}

} // namespace warm
