#pragma once
// Image-level transfers built on the client: push, pull and copy between registries
// and OCI layouts. An image source says where each blob lives (a local file or a
// registry repository); destinations get blobs first (in parallel, bounded), then
// manifests, children before an index. Registry to registry, blobs stream through
// without being decompressed, recompressed or stored.
#include "oci/layout.hpp"
#include "oci/reference.hpp"
#include "registry/client.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace registry {

// Where a blob's bytes are.
struct BlobLocation {
  std::filesystem::path file;         // a local, verified blob file
  std::shared_ptr<Registry> registry; // or a repository of a registry
  std::string repo;
};

struct ImageSource {
  std::string name;  // for messages ("oci:out/app:1.0", "host/repo:tag")
  ManifestData root; // the manifest or index the reference names
  // An index's child manifest by descriptor.
  std::function<ManifestData(const oci::Descriptor&)> manifest;
  std::function<BlobLocation(const oci::Descriptor&)> locate;
};

ImageSource layout_source(const oci::ImageRef& ref);
ImageSource registry_source(std::shared_ptr<Registry> reg, const oci::ImageRef& ref);

struct TransferOptions {
  int jobs = 4; // parallel blob transfers
  oci::Platform platform{"amd64", "linux", ""};
  bool all_platforms = false; // copy a whole index instead of one platform
  Progress progress;          // per blob
  std::function<void(const std::string&)> info;
};

struct TransferResult {
  ManifestData manifest;         // what was written (the platform's manifest, or the index)
  std::vector<std::string> refs; // written references ("host/repo:tag@sha256:..")
};

// Picks the platform's manifest from an index (or returns an image manifest as is).
ManifestData select_platform(const ImageSource& src, const ManifestData& root, const oci::Platform& p);

// Pushes src to reg/repo under each tag (no tags: by digest only).
TransferResult push_image(const ImageSource& src, const std::shared_ptr<Registry>& reg, const std::string& repo,
                          const std::vector<std::string>& tags, const TransferOptions& opt);
// Writes src into the OCI layout at dir under each tag, atomically, blobs verified.
TransferResult write_layout(const ImageSource& src, const std::filesystem::path& dir,
                            const std::vector<std::string>& tags, const TransferOptions& opt);

// Runs fn(i) for i in [0, n) on up to `jobs` threads; the first error stops the
// others from starting new items and is rethrown.
void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& fn);

// A reader over a local file from an offset (pread, 1 MiB at a time).
Reader file_reader(const std::filesystem::path& file, std::int64_t offset);

} // namespace registry
