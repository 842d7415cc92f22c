#pragma once
// An image opened as a place to read and add attachments (signatures, attestations,
// SBOMs): what `sign`, `attest`, `verify`, `sbom` and `build --sign` work on. The
// attachment stores stay their own API (a read-modify-write of the cosign `.sig`,
// `.att` tags), beside open_destination; the image itself is opened by open_source.
#include "imageio/source.hpp"
#include "oci/attachment.hpp"
#include "oci/layout.hpp"

#include <memory>
#include <string>

namespace imageio {

// An image reference opened for signing or verifying: the image, the digest its
// reference names, the identity a signature carries by default, and (when opened for
// writing) where attachments go. Layouts are locked while it lives.
struct SignTarget {
  oci::ImageRef ref;
  oci::ImagePtr image;
  oci::Digest digest;
  std::string identity;     // "host/repo:tag" (layouts: the image's title and the tag)
  std::string subject_name; // "host/repo" (layouts: the title)
  std::unique_ptr<oci::OciLayout::DirLock> lock;
  std::unique_ptr<oci::OciLayout> layout;
  std::unique_ptr<oci::AttachmentStore> store;
  // The reference with the digest it resolved to, once: "host/repo:tag@sha256:..", or
  // the reference as given when it already names that digest.
  std::string shown() const { return ref.digest == digest.str() ? ref.str() : ref.str() + "@" + digest.str(); }
};
// A docker-archive or an oci-archive is a usage error (neither can carry attachments); a layout must
// exist. `identity_flag` overrides the identity; a layout image without a title
// naming a registry repository needs it. Layouts are locked while it lives when
// `writable`. A registry reference needs `connect`.
SignTarget open_sign_target(const std::string& text, const Connect& connect, const std::string& identity_flag,
                            bool writable);
// The same for a reference already parsed (a build's published outputs).
SignTarget open_sign_target(const oci::ImageRef& ref, const Connect& connect, const std::string& identity_flag,
                            bool writable);

} // namespace imageio
