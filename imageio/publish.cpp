#include "imageio/publish.hpp"

#include "util/encoding.hpp"
#include "util/error.hpp"

#include <utility>

namespace imageio {

using util::Error;
using util::ErrorKind;

std::vector<oci::ImageRef> Published::tagged() const {
  std::vector<oci::ImageRef> out;
  for (const auto& t : tags) {
    oci::ImageRef r = destination;
    r.tag = t;
    r.tag_defaulted = false;
    r.digest.clear();
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    oci::ImageRef r = destination;
    r.tag.clear();
    r.tag_defaulted = false;
    r.digest = destination.kind == oci::ImageRef::Kind::registry ? digest.str() : std::string();
    out.push_back(std::move(r));
  }
  return out;
}

bool Published::signable() const {
  return destination.kind == oci::ImageRef::Kind::oci_layout || destination.kind == oci::ImageRef::Kind::registry;
}

void check_destination(const oci::ImageRef& dst, const std::string& flag) {
  if (dst.kind == oci::ImageRef::Kind::registry && !dst.digest.empty()) {
    throw Error(ErrorKind::usage, flag + " " + dst.str() + ": a destination takes a tag, not a digest",
                "drop the @sha256:... part");
  }
}

namespace {

Published write_one(const oci::Image& image, const oci::ImageRef& dst, const PublishOptions& o) {
  bool registry = dst.kind == oci::ImageRef::Kind::registry;
  DestinationOptions d;
  d.copy = registry ? o.push : o.local;
  if (registry && o.connect) {
    // Connected (credentials, the registry's first answer) before the line is said.
    d.connect = [reg = o.connect(dst.registry)](const std::string&) { return reg; };
  }
  d.check_blobs = o.check_blobs;
  d.image_name = o.image_name;
  d.archive_mtime = o.archive_mtime;
  d.omit = o.omit;
  d.selected = o.selected;
  Published p;
  p.destination = dst;
  p.tags = destination_tags(dst, o.tags, o.fallback);
  auto sink = open_destination(dst, std::move(d));
  if (registry && o.info) {
    o.info("pushing to " + dst.registry + "/" + dst.repository + " (" + util::join(p.tags, ", ") + ")");
  }
  p.written = sink->write(registry && o.registry_image != nullptr ? *o.registry_image : image, p.tags);
  p.digest = p.written.manifest.digest;
  return p;
}

} // namespace

std::vector<Published> publish(const oci::Image& image, const std::vector<oci::ImageRef>& to, const PublishOptions& o) {
  for (const auto& dst : to) {
    check_destination(dst, "destination");
  }
  std::vector<Published> out;
  for (bool registries : {false, true}) {
    for (const auto& dst : to) {
      if ((dst.kind == oci::ImageRef::Kind::registry) == registries) {
        out.push_back(write_one(image, dst, o));
      }
    }
  }
  return out;
}

} // namespace imageio
