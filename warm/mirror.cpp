#include "warm/mirror.hpp"

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
  MirrorResult res;
  // No tags here: the manifest goes by digest (what a digest-pinned pull asks for). Every
  // blob is checked even when the mirror has the manifest, so a push repairs a mirror
  // that lost a blob (docs/warm.md: a HEAD per blob).
  res.copy = registry::push_image(img, mirror, repo, {}, opt, true);
  const oci::ManifestBlob& top = res.copy.manifest;
  for (const auto& t : tags) {
    auto have = mirror->head_manifest(repo, t);
    if (!have || have->digest != top.digest) {
      mirror->put_manifest(repo, t, top);
    }
    res.tags.push_back(t);
    res.copy.refs.push_back(mirror->host() + "/" + repo + ":" + t + "@" + top.digest.str());
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
  oci::ImagePtr img = registry::open_registry_image(cache, ref);
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

} // namespace warm
