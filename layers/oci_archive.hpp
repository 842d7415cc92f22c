#pragma once
// The oci-archive: an OCI image layout (oci-layout, index.json, blobs/<alg>/<hex>) as
// one plain tar, the form `ctr images import`, skopeo (`oci-archive:`) and podman
// load read. Written from any oci::Image, atomically; every blob is hashed while it
// streams into the tar and checked against its descriptor. A thin archive leaves out
// the blobs the reader already has (`omit`): its index.json still names them, so only
// a reader whose store holds them (a node's containerd) can use it.
#include "oci/image.hpp"

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace layers {

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
