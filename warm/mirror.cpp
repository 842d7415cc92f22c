#include "warm/mirror.hpp"

#include "imageio/publish.hpp"
#include "imageio/source.hpp"
#include "oci/reference.hpp"
#include "registry/transfer.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

#include <atomic>
#include <set>

namespace warm {

using util::Error;
using util::ErrorKind;

MirrorResult push_to_mirror(const oci::Image& img, const std::shared_ptr<registry::Registry>& mirror,
                            const std::string& repo, const std::vector<std::string>& tags,
                            const oci::CopyOptions& opt) {
  oci::ImageRef dst;
  dst.kind = oci::ImageRef::Kind::registry;
  dst.registry = mirror->host();
  dst.repository = repo;
  imageio::PublishOptions po;
  po.push = opt;
  po.tags = tags; // none: by digest only (what a digest-pinned pull asks for)
  po.connect = [mirror](const std::string&) { return mirror; };
  // Every blob is checked even when the mirror has the manifest, so a push repairs a
  // mirror that lost a blob (docs/warm.md: a HEAD per blob).
  po.check_blobs = true;
  imageio::Published p = imageio::publish(img, {dst}, po).front();
  MirrorResult res;
  res.copy = p.written;
  res.tags = tags;
  if (!tags.empty()) {
    // The mirror serves it by digest too: that line first, then each tag.
    res.copy.refs.insert(res.copy.refs.begin(), mirror->host() + "/" + repo + "@" + p.digest.str());
  }
  return res;
}

ThroughResult warm_through(const std::shared_ptr<registry::Registry>& cache, const std::string& repo,
                           const std::string& reference, const oci::CopyOptions& opt) {
  oci::ImageRef ref;
  ref.kind = oci::ImageRef::Kind::registry;
  ref.registry = cache->host();
  ref.repository = repo;
  if (reference.rfind("sha256:", 0) == 0) {
    ref.digest = reference;
  } else {
    ref.tag = reference;
  }
  // The root by its name (a tag makes the cache store the tag too), then by digest.
  oci::ImagePtr img = imageio::open_source(ref, [&cache](const std::string&) { return cache; });
  ThroughResult res;
  res.top = img->root();
  cache->get_manifest(repo, res.top.digest.str());
  res.manifests.push_back(res.top.digest);
  // Children and attachments are read by digest while the plan is made.
  oci::CopyPlan plan = oci::plan_copy(*img, opt);
  std::set<std::string> seen{res.top.digest.str()};
  std::vector<ThroughBlob> blobs;
  std::set<std::string> blob_seen;
  auto add_blobs = [&](const oci::ManifestBlob& m, bool attachment) {
    if (seen.insert(m.digest.str()).second) {
      res.manifests.push_back(m.digest);
    }
    if (m.is_index()) {
      return;
    }
    std::vector<oci::Descriptor> list = oci::image_blobs(m, img->name());
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (blob_seen.insert(list[i].digest.str()).second) {
        blobs.push_back({list[i], attachment ? "attachment" : i == 0 ? "config" : "layer", 0});
      }
    }
  };
  for (const auto& m : plan.images) {
    add_blobs(m, false);
  }
  for (const auto& a : plan.attached) {
    add_blobs(a.manifest, true);
    ++res.attachments;
  }
  std::atomic<std::int64_t> total{0};
  util::parallel_for(blobs.size(), opt.jobs, [&](std::size_t i) {
    ThroughBlob& b = blobs[i];
    util::with_context("reading " + b.desc.digest.str() + " through " + cache->host() + "/" + repo, [&] {
      oci::VerifyingSink v(b.desc, cache->host() + "/" + repo, {});
      img->read_blob(b.desc, [&](const char* p, std::size_t n) {
        v(p, n);
        if (opt.progress) {
          opt.progress(b.desc.digest, v.bytes(), b.desc.size);
        }
      });
      v.check();
      b.read = v.bytes();
    });
    total += b.read;
  });
  res.blobs = std::move(blobs);
  res.bytes = total;
  return res;
}

PushTarget push_target(const PushRequest& req) {
  if (req.to.empty() == req.through.empty()) {
    throw Error(ErrorKind::usage, "warm push needs one of --to MIRROR or --through URL",
                "--to pushes what a mirror lacks; --through reads everything through a pull-through cache");
  }
  PushTarget p;
  p.ref = parse_registry_image(req.image, "IMAGE");
  if (req.tag && p.ref.tag.empty()) {
    throw Error(ErrorKind::usage, "--tag puts IMAGE's tag on the mirror, and " + p.ref.str() + " has none",
                "name the image by tag (REG/REPO:TAG or REG/REPO:TAG@sha256:...)");
  }
  if (req.tag && !req.through.empty()) {
    throw Error(ErrorKind::usage, "--tag goes with --to (a pull-through cache takes no pushes)");
  }
  p.to_mirror = !req.to.empty();
  p.target = parse_target(p.to_mirror ? req.to : req.through, p.to_mirror ? "--to" : "--through");
  if (p.to_mirror && p.target.host == p.ref.registry) {
    throw Error(ErrorKind::usage, "--to " + req.to + " is IMAGE's own registry",
                "name the mirror nodes pull from, e.g. --to mirror.cluster.local:5000");
  }
  if (req.tag) {
    p.tags.push_back(p.ref.tag);
  }
  return p;
}

nlohmann::json to_json(const MirrorResult& r, const oci::ImageRef& ref, const std::string& mirror) {
  return {{"image", ref.str()},
          {"mirror", mirror},
          {"repository", ref.repository},
          {"digest", r.copy.manifest.digest.str()},
          {"refs", r.copy.refs},
          {"tags", r.tags},
          {"attachments", r.copy.attachments}};
}

nlohmann::json to_json(const ThroughResult& r, const oci::ImageRef& ref, const std::string& cache) {
  nlohmann::json blobs = nlohmann::json::array();
  for (const auto& b : r.blobs) {
    blobs.push_back({{"digest", b.desc.digest.str()}, {"kind", b.kind}, {"size", b.desc.size}, {"read", b.read}});
  }
  nlohmann::json manifests = nlohmann::json::array();
  for (const auto& m : r.manifests) {
    manifests.push_back(m.str());
  }
  return {{"image", ref.str()},     {"cache", cache}, {"repository", ref.repository}, {"digest", r.top.digest.str()},
          {"manifests", manifests}, {"blobs", blobs}, {"attachments", r.attachments}, {"bytes", r.bytes}};
}

} // namespace warm
