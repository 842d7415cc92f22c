#pragma once
// `warm verify`: does a mirror (a registry) or a node's content store (a directory of
// blobs/<alg>/<hex>, as containerd's io.containerd.content.v1.content and OCI layouts
// keep them) hold every blob of an image, with the right bytes? Each blob is read
// whole and hashed, never trusted by its name; every missing or corrupt blob is
// named, not just the first.
#include "oci/image.hpp"
#include "oci/reference.hpp"
#include "registry/client.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace warm {

enum class BlobStatus { ok, missing, corrupt };

struct BlobCheck {
  oci::Descriptor desc;
  std::string kind; // "index", "manifest", "config", "layer", "attachment"
  BlobStatus status = BlobStatus::ok;
  std::string detail; // why it is missing or corrupt
};

struct VerifyReport {
  std::string target; // "registry HOST/REPO" or "content DIR"
  oci::Digest digest; // the image's top manifest
  std::vector<BlobCheck> blobs;
  std::size_t ok = 0, missing = 0, corrupt = 0;
  std::int64_t bytes_read = 0;

  bool passed() const { return missing == 0 && corrupt == 0; }
  // util::ErrorKind::integrity when a blob is corrupt, incomplete when one is only
  // missing (meaningful when !passed()).
  util::ErrorKind failure_kind() const;
  std::string summary() const;
};

nlohmann::json to_json(const VerifyReport& r);

// The image `digest` (or `tag`, looked up there) of `repo` in a registry. Its
// signatures and attestations (cosign tags) are checked too when opt.attachments.
VerifyReport verify_registry(const std::shared_ptr<registry::Registry>& reg, const std::string& repo,
                             const std::string& reference, const oci::CopyOptions& opt);
// The image `digest` in a content directory (DIR/blobs/<alg>/<hex>).
VerifyReport verify_content_dir(const std::filesystem::path& dir, const oci::Digest& digest,
                                const oci::CopyOptions& opt);

// --registry and --content-dir are two stores to check: exactly one is a usage error
// otherwise.
void check_one_store(const std::string& registry, const std::string& content_dir);
// The digest `warm verify --content-dir` looks for: IMAGE as sha256:..., or a registry
// reference pinned by digest; a tag (or a layout or archive) is a usage error, since a
// content store keeps blobs, not tags.
oci::Digest content_dir_digest(const std::string& image);
// Whether IMAGE's tag is resolved on its own registry before a check on `host`: a tag
// (no digest) checked on another registry (a mirror pushed to by digest has no tag).
bool resolves_upstream(const oci::ImageRef& ref, const std::string& host);
// The digest `ref`'s tag names on `upstream` (its own registry) now; a registry error
// when there is no such tag.
oci::Digest upstream_digest(const std::shared_ptr<registry::Registry>& upstream, const oci::ImageRef& ref);

// The error of a failed check (!r.passed()): the summary for IMAGE and its digest, then
// a line per missing or corrupt blob with why.
std::string failure_message(const VerifyReport& r, const std::string& image);
// What to do about a failure of r.failure_kind() `kind`: a corrupt blob is deleted and
// fetched again, a missing one warmed.
std::string failure_hint(util::ErrorKind kind);

} // namespace warm
