#pragma once
// `docker load` / `podman load` tar: manifest.json, <config-hex>.json and one
// uncompressed <diff_id-hex>.tar per layer (as skopeo writes them). Written
// atomically; each layer's diff_id is verified while streaming.
#include "oci/digest.hpp"
#include "oci/layout.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace layers {

struct ArchiveLayer {
  std::filesystem::path blob;
  std::string media_type;
  oci::Digest diff_id;
  std::optional<std::int64_t> uncompressed_size; // computed by a first pass when unknown
};

// Reads a docker-archive (from `docker save`, skopeo or write_docker_archive) into
// an OCI layout: the config and each layer become blobs, stored as they are in the
// archive (tar, or gzip/zstd when compressed), streamed and hashed; the first image of
// manifest.json becomes an OCI manifest under `tag`. Returns its descriptor; the
// image's RepoTags ("repo:tag") go into *repo_tags when given. A tar that breaks off is
// reported as truncated.
oci::Descriptor import_docker_archive(const std::filesystem::path& file, oci::OciLayout& layout, const std::string& tag,
                                      std::vector<std::string>* repo_tags = nullptr);

void write_docker_archive(const std::filesystem::path& out, const std::string& config_bytes,
                          const oci::Digest& config_digest, const std::vector<ArchiveLayer>& layers,
                          const std::vector<std::string>& repo_tags, std::int64_t mtime);

} // namespace layers
