#include "warm/export.hpp"

#include "layers/docker_archive.hpp"
#include "layers/oci_archive.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace warm {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

ArchiveFormat parse_archive_format(const std::string& text, const std::string& flag) {
  if (text == "oci-archive") {
    return ArchiveFormat::oci_archive;
  }
  if (text == "docker-archive") {
    return ArchiveFormat::docker_archive;
  }
  throw Error(ErrorKind::usage, flag + ": '" + text + "' is not an archive format",
              "use oci-archive or docker-archive");
}

std::string format_name(ArchiveFormat f) {
  return f == ArchiveFormat::oci_archive ? "oci-archive" : "docker-archive";
}

void check_export_options(const ExportOptions& opt, bool thin) {
  if (thin && opt.format != ArchiveFormat::oci_archive) {
    throw Error(ErrorKind::usage, "--thin works with --format oci-archive only",
                "containerd looks for the layers of a docker-archive inside the tar only; use --format oci-archive");
  }
  if (thin && !opt.have) {
    throw Error(ErrorKind::usage, "--thin needs --have FILE (the digests the node has)",
                "on the node: ctr -n k8s.io content ls -q > node-digests.txt; then --thin --have node-digests.txt");
  }
  if (!thin && opt.have) {
    throw Error(ErrorKind::usage, "--have goes with --thin (a full archive holds every blob)",
                "add --thin, or drop --have");
  }
  if (opt.format == ArchiveFormat::docker_archive && opt.tag.empty()) {
    throw Error(ErrorKind::usage, "a docker-archive names its image by tag, and none was given",
                "name a tag (IMAGE:TAG or --name REPO:TAG), or use --format oci-archive");
  }
}

std::string import_command(const fs::path& file, const oci::Platform& platform) {
  return "ctr -n k8s.io images import --platform " + util::shell_quote(oci::platform_str(platform)) + " " +
         util::shell_quote(file.string());
}

std::string pin_command(const std::string& name) {
  return "ctr -n k8s.io images label " + util::shell_quote(name) + " " + k_pin_label;
}

ExportResult export_archive(const oci::Image& img, const fs::path& out, const ExportOptions& opt) {
  check_export_options(opt, opt.have.has_value());
  ExportResult res;
  res.file = out;
  res.format = opt.format;
  oci::ManifestBlob platform_manifest = oci::select_platform(img, opt.copy);
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(platform_manifest.bytes, "manifest of " + img.name()));
  oci::ImageConfig cfg = oci::read_config(img, m);
  res.platform = oci::Platform{cfg.architecture, cfg.os, cfg.variant};
  if (opt.format == ArchiveFormat::docker_archive) {
    std::string name = opt.repository + ":" + opt.tag;
    layers::ArchiveOptions ao;
    ao.repo_tags.push_back(name);
    ao.mtime = opt.mtime;
    ao.copy = opt.copy;
    ao.copy.attachments = false;
    oci::CopyResult cr = layers::write_docker_archive(img, out, ao);
    res.manifest = cr.manifest;
    res.names.push_back(name);
    std::error_code ec;
    res.archive_bytes = static_cast<std::int64_t>(fs::file_size(out, ec));
  } else {
    layers::OciArchiveOptions ao;
    ao.mtime = opt.mtime;
    ao.copy = opt.copy;
    // The top manifest's digest names the image too: a digest-pinned pod asks the
    // CRI for "repo@sha256:...", which only an image of that name answers.
    oci::Digest top = opt.copy.all_platforms && img.root().is_index() ? img.root().digest : platform_manifest.digest;
    if (!opt.tag.empty()) {
      std::string name = opt.repository + ":" + opt.tag;
      ao.entries.push_back({{k_containerd_name_annotation, name}, {oci::k_ref_name_annotation, opt.tag}});
      res.names.push_back(name);
    }
    std::string by_digest = opt.repository + "@" + top.str();
    ao.entries.push_back({{k_containerd_name_annotation, by_digest}, {oci::k_ref_name_annotation, by_digest}});
    res.names.push_back(by_digest);
    if (opt.have) {
      for (const auto& d : opt.have->digests) {
        ao.omit.insert(d);
      }
    }
    layers::OciArchiveResult r = layers::write_oci_archive(img, out, ao);
    res.manifest = r.manifest;
    res.written = r.written;
    res.omitted = r.omitted;
    res.archive_bytes = r.archive_bytes;
  }
  res.commands.push_back(import_command(out, res.platform));
  if (opt.pin) {
    for (const auto& n : res.names) {
      res.commands.push_back(pin_command(n));
    }
  }
  return res;
}

} // namespace warm
