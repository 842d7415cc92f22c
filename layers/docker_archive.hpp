#pragma once
// `docker load` / `podman load` tar: manifest.json, <config-hex>.json and one
// uncompressed <diff_id-hex>.tar per layer (as skopeo writes them). Read in place
// as an oci::Image (members are located once and read with pread: nothing is copied
// or unpacked), and written from any oci::Image, atomically, each layer's diff_id
// verified while it streams.
#include "oci/image.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace layers {

// One member of a plain tar file: where its data starts and how long it is.
struct TarIndexEntry {
  std::string path; // without leading "./" or "/"
  char type = '0';  // '0' file, '5' dir, '2' symlink, '1' hard link, ...
  std::int64_t offset = 0;
  std::int64_t size = 0;
  std::string link_target;
};

// Reads the member headers of a plain (uncompressed) tar: ustar, GNU long names and
// PAX path/size/linkpath records. A file that breaks off is an input error saying
// "truncated"; one that is not a tar at all says so.
std::vector<TarIndexEntry> index_tar(const std::filesystem::path& file);

class ArchiveImage : public oci::Image {
public:
  // Opens the first image of a docker-archive (`docker save`, `podman save`, skopeo,
  // paddle-image). `name` is used in messages.
  ArchiveImage(const std::filesystem::path& file, std::string name);
  const std::string& name() const override { return m_name; }
  const oci::ManifestBlob& root() const override { return m_root; }
  oci::ManifestBlob manifest(const oci::Descriptor& d) const override;
  oci::Reader open_blob(const oci::Descriptor& d, std::int64_t offset) const override;
  oci::BlobHints hints(const oci::Descriptor& d) const override;
  // The archive's RepoTags ("repo:tag"), as stored.
  const std::vector<std::string>& repo_tags() const { return m_repo_tags; }

private:
  struct Blob {
    std::int64_t offset = 0;
    std::int64_t size = 0;
    bool verified = false;
    std::int64_t uncompressed_size = -1;
  };
  const Blob& find(const oci::Descriptor& d) const;

  std::filesystem::path m_file;
  std::string m_name;
  oci::ManifestBlob m_root;
  std::vector<std::string> m_repo_tags;
  std::vector<std::pair<oci::Digest, Blob>> m_blobs;
  std::string m_config_bytes;
};

struct ArchiveOptions {
  std::vector<std::string> repo_tags; // "repo:tag" entries of manifest.json
  std::int64_t mtime = 0;             // every member's mtime (SOURCE_DATE_EPOCH)
  oci::CopyOptions copy;              // platform selection, progress
};

// Writes the image's platform manifest as a docker-archive at `out`. A layer whose
// uncompressed size the source knows is decompressed once straight into the archive;
// otherwise it is decompressed once into a spool file next to `out` (to learn the
// size a tar header needs first) and copied from there. Returns what was written.
oci::CopyResult write_docker_archive(const oci::Image& img, const std::filesystem::path& out,
                                     const ArchiveOptions& opt);

} // namespace layers
