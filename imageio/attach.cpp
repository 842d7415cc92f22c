#include "imageio/attach.hpp"

#include "oci/layout_image.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"

#include <filesystem>

namespace imageio {

using util::Error;
using util::ErrorKind;

namespace {

// "host/repo" of an image title that names its registry ("registry.example.com/ocr/
// train"); "" for a bare name ("ocr" would read as docker.io/library/ocr, which is
// rarely where the image goes: such images are signed with --identity).
std::string signing_repository(const std::string& title) {
  std::string first = title.substr(0, title.find('/'));
  bool has_host =
      title.find('/') != std::string::npos &&
      (first.find('.') != std::string::npos || first.find(':') != std::string::npos || first == "localhost");
  if (!has_host) {
    return {};
  }
  try {
    oci::ImageRef r = oci::ImageRef::parse(title);
    if (r.kind == oci::ImageRef::Kind::registry && r.digest.empty()) {
      return r.name();
    }
  } catch (const Error&) {
    // Not a reference: no identity can come from it.
  }
  return {};
}

} // namespace

SignTarget open_sign_target(const std::string& text, const Connect& connect, const std::string& identity_flag,
                            bool writable) {
  return open_sign_target(oci::ImageRef::parse(text), connect, identity_flag, writable);
}

SignTarget open_sign_target(const oci::ImageRef& ref, const Connect& connect, const std::string& identity_flag,
                            bool writable) {
  SignTarget t;
  t.ref = ref;
  const std::string text = ref.str();
  switch (t.ref.kind) {
  case oci::ImageRef::Kind::docker_archive:
  case oci::ImageRef::Kind::oci_archive:
    throw Error(ErrorKind::usage,
                text + ": a" + std::string(t.ref.kind == oci::ImageRef::Kind::oci_archive ? "n oci" : " docker") +
                    "-archive cannot carry signatures or attestations",
                "sign the image in an OCI layout (oci:DIR:TAG) or in a registry");
  case oci::ImageRef::Kind::registry: {
    auto reg = connect(t.ref.registry); // the image and its attachment store share the connection
    t.image = open_source(t.ref, [&reg](const std::string&) { return reg; });
    t.subject_name = t.ref.name();
    t.identity = t.ref.tag.empty() ? t.ref.name() : t.ref.name() + ":" + t.ref.tag;
    if (writable) {
      t.store = std::make_unique<registry::RegistryAttachments>(reg, t.ref.repository);
    }
    break;
  }
  case oci::ImageRef::Kind::oci_layout: {
    std::error_code ec;
    if (!std::filesystem::is_directory(t.ref.path, ec)) {
      throw Error(ErrorKind::input, text + ": no OCI layout at " + t.ref.path, "build or pull the image first");
    }
    if (writable) {
      t.lock = oci::OciLayout::lock_dir(t.ref.path);
      t.layout = std::make_unique<oci::OciLayout>(oci::OciLayout::open_existing(t.ref.path));
      t.store = std::make_unique<oci::LayoutAttachments>(*t.layout);
    }
    t.image = open_source(t.ref, connect);
    std::string title;
    if (!t.image->root().is_index()) {
      oci::Manifest m = oci::manifest_from_json(oci::parse_json(t.image->root().bytes, "manifest of " + text));
      oci::ImageConfig c = oci::read_config(*t.image, m);
      auto it = c.config.labels.find("org.opencontainers.image.title");
      if (it != c.config.labels.end()) {
        title = it->second;
      }
    }
    if (std::string repo = signing_repository(title); !repo.empty()) {
      t.subject_name = repo;
      std::string tag = t.ref.tag;
      if (tag.empty()) {
        // The tag the layout's one image goes by.
        for (const auto& m : oci::OciLayout::open_existing(t.ref.path).read_index().manifests) {
          auto a = m.annotations.find(oci::k_ref_name_annotation);
          if (m.digest == t.image->root().digest && a != m.annotations.end() && !oci::is_attachment_tag(a->second)) {
            tag = a->second;
            break;
          }
        }
      }
      t.identity = tag.empty() ? t.subject_name : t.subject_name + ":" + tag;
    }
    if (identity_flag.empty() && t.identity.empty()) {
      throw Error(ErrorKind::usage,
                  text + ": the image's org.opencontainers.image.title does not name a registry repository, so its "
                         "signed identity is unknown",
                  "pass --identity REGISTRY/REPO:TAG (the reference the image will be pulled as)");
    }
    break;
  }
  }
  t.digest = t.image->root().digest;
  if (!identity_flag.empty()) {
    oci::ImageRef id = util::with_context("--identity", [&] { return oci::ImageRef::parse(identity_flag); });
    if (id.kind != oci::ImageRef::Kind::registry || !id.digest.empty()) {
      throw Error(ErrorKind::usage, "--identity '" + identity_flag + "' is not a registry reference without a digest",
                  "e.g. --identity registry.example.com/team/ocr:1.4");
    }
    t.identity = id.tag_defaulted ? id.name() : id.name() + ":" + id.tag;
    t.subject_name = id.name();
  }
  return t;
}

} // namespace imageio
