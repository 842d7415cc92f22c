#pragma once
// The oci-archive: an OCI image layout (oci-layout, index.json, blobs/<alg>/<hex>) as
// one plain tar, the form `ctr images import`, skopeo (`oci-archive:`) and podman
// load read. Read in place as an oci::Image (members located once, read with pread),
// and written from any oci::Image, atomically; every blob is hashed while it
// streams into the tar and checked against its descriptor. A thin archive leaves out
// the blobs the reader already has (`omit`): its index.json still names them, so only
// a reader whose store holds them (a node's containerd) can use it.
#include "oci/image.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace layers {

class OciArchiveImage : public oci::Image {
public:
  // The image under `tag` (org.opencontainers.image.ref.name) in the archive at `file`;
  // with an empty tag, the only image. `name` is used in messages. Blobs are read
  // where they lie in the tar; their bytes are checked by whoever copies them.
  OciArchiveImage(const std::filesystem::path& file, const std::string& tag, std::string name);
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor& d) const override;
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override;
  oci::BlobHints hints(const oci::Descriptor& d) const override;
  // The containerd names ("REPO:TAG") of the entries that hold the chosen image, as
  // stored (those by digest left out).
  const std::vector<std::string>& repo_tags() const { return m_repo_tags; }

private:
  struct Member {
    std::int64_t offset = 0;
    std::int64_t size = 0;
  };
  const Member& find(const oci::Descriptor& d) const;
  std::string read_member(const Member& m, const std::string& what) const;

  std::filesystem::path m_file;
  std::string m_name;
  oci::ManifestBlob m_root;
  std::map<std::string, Member> m_blobs; // "sha256:<hex>" -> where it lies
  std::vector<std::string> m_repo_tags;
};

struct OciArchiveOptions {
  // One index.json entry (the same manifest) per element, with these annotations
  // (image names); none: one entry without annotations.
  std::vector<oci::Annotations> entries;
  std::set<std::string> omit; // digests ("sha256:...") of layer blobs to leave out
  std::int64_t mtime = 0;     // every member's mtime
  oci::CopyOptions copy;      // platform selection (attachments are not written), progress
};

struct OciArchiveResult {
  oci::ManifestBlob manifest;           // what index.json points at
  std::vector<oci::Descriptor> written; // blobs in the archive (manifests included)
  std::vector<oci::Descriptor> omitted; // blobs left out (thin)
  std::int64_t archive_bytes = 0;       // size of the tar
};

// Writes the image (its platform manifest, or the whole index with copy.all_platforms)
// as an oci-archive at `out` (a file; its directory is created). Manifests and
// configs are always written; only layers can be omitted.
OciArchiveResult write_oci_archive(const oci::Image& img, const std::filesystem::path& out,
                                   const OciArchiveOptions& opt);

} // namespace layers
