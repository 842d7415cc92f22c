#include "warm/export.hpp"

#include "imageio/destination.hpp"
#include "imageio/publish.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "warm/target.hpp"

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

void set_export_name(ExportOptions& opt, const oci::ImageRef& image, const std::string& name_flag) {
  if (!name_flag.empty()) {
    oci::ImageRef n = parse_registry_image(name_flag, "--name");
    if (!n.digest.empty()) {
      throw Error(ErrorKind::usage, "--name takes REPOSITORY[:TAG]; the digest comes from the image",
                  "drop the @sha256:... part");
    }
    opt.repository = n.name();
    std::vector<std::string> tags = imageio::destination_tags(n, {}, {});
    opt.tag = tags.empty() ? "" : tags.front();
  } else if (image.kind == oci::ImageRef::Kind::registry) {
    opt.repository = image.name();
    opt.tag = image.tag; // the fallback of the tag policy: IMAGE's tag, an assumed latest included
  } else {
    throw Error(ErrorKind::usage, image.str() + " has no registry name, and the node's containerd names images by one",
                "pass --name REGISTRY/REPO[:TAG], the name pods use");
  }
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

std::string import_command(const fs::path& file, const oci::Platform& platform, const std::string& digest_names) {
  std::string by_digest =
      digest_names.empty() ? std::string() : "--digests --base-name " + util::shell_quote(digest_names) + " ";
  return "ctr -n k8s.io images import " + by_digest + "--platform " + util::shell_quote(oci::platform_str(platform)) +
         " " + util::shell_quote(file.string());
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
  imageio::PublishOptions po;
  po.local = opt.copy;
  po.image_name = oci::ImageRef::parse(opt.repository);
  po.archive_mtime = opt.mtime;
  if (!opt.tag.empty()) {
    po.fallback.push_back(opt.tag);
  }
  oci::ImageRef ref;
  ref.path = out.string();
  if (opt.format == ArchiveFormat::docker_archive) {
    ref.kind = oci::ImageRef::Kind::docker_archive;
    po.local.attachments = false;
  } else {
    ref.kind = oci::ImageRef::Kind::oci_archive;
    po.selected = platform_manifest;
    if (opt.have) {
      po.omit.insert(opt.have->digests.begin(), opt.have->digests.end());
    }
  }
  imageio::WriteResult w = imageio::publish(img, {ref}, po).front().written;
  if (opt.format == ArchiveFormat::docker_archive) {
    res.names.push_back(opt.repository + ":" + opt.tag);
  } else {
    res.names = w.names;
  }
  res.manifest = w.manifest;
  res.written = std::move(w.written);
  res.omitted = std::move(w.omitted);
  res.archive_bytes = w.archive_bytes;
  res.commands.push_back(import_command(
      out, res.platform, opt.format == ArchiveFormat::docker_archive ? std::string() : po.image_name->name()));
  if (opt.pin) {
    for (const auto& n : res.names) {
      res.commands.push_back(pin_command(n));
    }
  }
  return res;
}

} // namespace warm
