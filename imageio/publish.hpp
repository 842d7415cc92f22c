#pragma once
// Publishing: the one step that writes an image somewhere. It takes an image and its
// destinations (-o, --push, copy's DST, warm's archive and mirror, the registry cache's
// entries), gives each the tags
// of the one tag policy (destination_tags), writes it through the sink of its kind
// (open_destination) and returns what was written, typed: the destination, the tags,
// the manifest's digest and the references that now serve the image, which the report
// and signing read without parsing a string. Layouts and archives are written first,
// in the order given, then registries (a local copy survives a failed push).
#include "imageio/destination.hpp"
#include "imageio/source.hpp"
#include "oci/digest.hpp"
#include "oci/image.hpp"
#include "oci/reference.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace imageio {

struct PublishOptions {
  std::vector<std::string> tags;     // --tag: written beside (or instead of) the destination's own
  std::vector<std::string> fallback; // the tags when neither a destination nor --tag names one
  // Layouts and archives: each blob copied once, in one thread and a fixed order.
  oci::CopyOptions local;
  // Registries: blobs in parallel, with progress and retries (the command's session).
  oci::CopyOptions push;
  Connect connect; // registry destinations' hosts; none refuses them (usage error)
  // A registry destination: HEAD every blob where the registry has the manifest
  // (DestinationOptions::check_blobs).
  bool check_blobs = false;
  std::optional<oci::ImageRef> image_name;   // an archive's image name (DestinationOptions::image_name)
  std::int64_t archive_mtime = 0;            // an archive's member times
  std::set<std::string> omit;                // an oci-archive: layers left out (thin)
  std::optional<oci::ManifestBlob> selected; // an oci-archive: the platform's manifest, already chosen
  // What registries read instead of the image, when set: the same image whose blobs
  // stay in the registries they came from (a build's registry base: mounted, not
  // downloaded).
  const oci::Image* registry_image = nullptr;
  // "pushing to HOST/REPO (TAGS)" before each push; none: not said.
  std::function<void(const std::string&)> info;
};

// One destination, written.
struct Published {
  oci::ImageRef destination; // as named
  std::vector<std::string> tags;
  oci::Digest digest; // the top manifest written
  WriteResult written;
  // The destination under each tag, without a digest (a registry pushed with no tag:
  // once, by `digest`): what a user or a signer opens.
  std::vector<oci::ImageRef> tagged() const;
  // A layout or a registry: it can carry signatures and attestations.
  bool signable() const;
};

// Refuses, before any work, a destination no image can be written to: a registry
// reference pinned by digest (`flag` names it in the message: "--push", "destination").
void check_destination(const oci::ImageRef& dst, const std::string& flag);

// Writes `image` to each destination (check_destination first, for all of them).
std::vector<Published> publish(const oci::Image& image, const std::vector<oci::ImageRef>& to, const PublishOptions& o);

} // namespace imageio
