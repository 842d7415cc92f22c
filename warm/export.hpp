#pragma once
// `warm export`: an archive a node imports into containerd's k8s.io namespace
// (`ctr -n k8s.io images import`), named so the CRI finds it by tag and by digest,
// with the import and pin commands to run. A thin oci-archive leaves out the layers
// the node has (--have); ctr import then needs those blobs in the node's content
// store, or it fails to unpack.
#include "oci/image.hpp"
#include "oci/reference.hpp"
#include "util/text.hpp"
#include "warm/have.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace warm {

enum class ArchiveFormat { oci_archive, docker_archive };
// "oci-archive" or "docker-archive"; `flag` names the option in the error.
ArchiveFormat parse_archive_format(const std::string& text, const std::string& flag);
std::string format_name(ArchiveFormat f);

inline constexpr const char* k_pin_label = "io.cri-containerd.pinned=pinned";

struct ExportOptions {
  ArchiveFormat format = ArchiveFormat::oci_archive;
  // The names the node's containerd gives the image: "host/repo:tag" and/or
  // "host/repo@sha256:..." (the digest of the platform manifest, added by export).
  std::string repository;       // "host/repo" as containerd spells it
  std::string tag;              // may be empty (then the image is named by digest only)
  std::optional<HaveList> have; // thin: leave these layers out (oci-archive only)
  bool pin = false;
  std::int64_t mtime = 0;
  oci::CopyOptions copy;
};

struct ExportResult {
  std::filesystem::path file;
  ArchiveFormat format = ArchiveFormat::oci_archive;
  oci::ManifestBlob manifest;
  oci::Platform platform;
  std::vector<std::string> names;       // image names in the node's containerd
  std::vector<oci::Descriptor> written; // blobs in the archive
  std::vector<oci::Descriptor> omitted; // layers left out (thin)
  std::int64_t archive_bytes = 0;
  std::vector<std::string> commands; // to run on the node, in order
};

// The names the node's containerd gives the image (the one tag policy,
// imageio::destination_tags): --name REPO[:TAG] (no digest; without a tag the image is
// named by digest only), else IMAGE's own registry name and tag; an IMAGE outside a
// registry needs --name (usage errors).
void set_export_name(ExportOptions& opt, const oci::ImageRef& image, const std::string& name_flag);
// Checks the flags that go together before anything is read (usage errors).
void check_export_options(const ExportOptions& opt, bool thin);
ExportResult export_archive(const oci::Image& img, const std::filesystem::path& out, const ExportOptions& opt);

// `ctr -n k8s.io images import [--digests --base-name REPO] --platform P FILE` (words
// quoted for a POSIX shell): with REPO (an oci-archive's repository), containerd also
// names the image REPO@DIGEST, which a pod pinned by digest looks up.
std::string import_command(const std::filesystem::path& file, const oci::Platform& platform,
                           const std::string& digest_names);
// `ctr -n k8s.io images label NAME io.cri-containerd.pinned=pinned`.
std::string pin_command(const std::string& name);
// A word quoted for a POSIX shell when it needs it (util/text.hpp's, named here too).
using util::shell_quote;

} // namespace warm
