#include "warm/plan.hpp"

#include "util/error.hpp"
#include "util/sha256.hpp"

namespace warm {

using util::Error;
using util::ErrorKind;

std::vector<oci::Digest> chain_ids(const std::vector<oci::Digest>& diff_ids) {
  std::vector<oci::Digest> out;
  out.reserve(diff_ids.size());
  for (const auto& d : diff_ids) {
    if (out.empty()) {
      out.push_back(d);
    } else {
      out.push_back(oci::Digest::sha256(util::sha256_hex(out.back().str() + " " + d.str())));
    }
  }
  return out;
}

namespace {

struct ImageParts {
  oci::ManifestBlob manifest;
  oci::Manifest parsed;
  oci::ImageConfig config;
};

ImageParts read_parts(const oci::Image& img, const oci::CopyOptions& opt) {
  ImageParts p;
  p.manifest = oci::select_platform(img, opt);
  p.parsed = oci::manifest_from_json(oci::parse_json(p.manifest.bytes, "manifest of " + img.name()));
  p.config = oci::read_config(img, p.parsed);
  if (p.config.diff_ids.size() != p.parsed.layers.size()) {
    throw Error(ErrorKind::input,
                img.name() + ": the config lists " + std::to_string(p.config.diff_ids.size()) + " diff_ids for " +
                    std::to_string(p.parsed.layers.size()) + " layers",
                "the image is malformed; rebuild it");
  }
  return p;
}

} // namespace

void check_one_baseline(const std::string& against, const std::string& have) {
  if (!against.empty() && !have.empty()) {
    throw Error(ErrorKind::usage, "--against and --have are two baselines; give one",
                "--against REF compares with an image the node runs; --have FILE with what its store holds");
  }
}

Baseline empty_baseline() {
  Baseline b;
  b.what = "nothing (a fresh node)";
  return b;
}

Baseline baseline_from_have(const HaveList& have) {
  Baseline b;
  b.what = "--have " + have.source;
  b.blobs = have.digests;
  return b;
}

Baseline baseline_from_image(const oci::Image& img, const oci::CopyOptions& opt) {
  ImageParts p = read_parts(img, opt);
  Baseline b;
  b.what = "--against " + img.name();
  b.knows_snapshots = true;
  b.blobs.insert(p.manifest.digest.str());
  b.blobs.insert(p.parsed.config.digest.str());
  for (const auto& l : p.parsed.layers) {
    b.blobs.insert(l.digest.str());
  }
  for (const auto& c : chain_ids(p.config.diff_ids)) {
    b.chain_ids.insert(c.str());
  }
  return b;
}

Plan make_plan(const oci::Image& img, const oci::CopyOptions& opt, const Baseline& base) {
  ImageParts p = read_parts(img, opt);
  Plan plan;
  plan.image = img.name();
  plan.digest = p.manifest.digest;
  plan.platform = oci::Platform{p.config.architecture, p.config.os, p.config.variant};
  plan.baseline = base.what;
  plan.manifest = p.manifest.descriptor();
  plan.config = p.parsed.config;
  auto has = [&](const oci::Digest& d) { return base.blobs.count(d.str()) != 0; };
  auto count = [&](std::int64_t size, bool shared) {
    plan.bytes_total += size;
    if (!shared) {
      plan.bytes_to_move += size;
    }
  };
  plan.manifest_shared = has(plan.manifest.digest);
  count(plan.manifest.size, plan.manifest_shared);
  plan.config_shared = has(plan.config.digest);
  count(plan.config.size, plan.config_shared);
  std::vector<oci::Digest> chains = chain_ids(p.config.diff_ids);
  for (std::size_t i = 0; i < p.parsed.layers.size(); ++i) {
    const oci::Descriptor& d = p.parsed.layers[i];
    LayerPlan l;
    l.digest = d.digest;
    l.diff_id = p.config.diff_ids[i];
    l.chain_id = chains[i];
    l.media_type = d.media_type;
    l.size = d.size;
    l.shared = has(d.digest);
    if (base.knows_snapshots) {
      l.snapshot_shared = base.chain_ids.count(l.chain_id.str()) != 0;
    }
    count(l.size, l.shared);
    plan.layers_new += l.shared ? 0 : 1;
    plan.layers.push_back(std::move(l));
  }
  return plan;
}

bool unpacks_again(const LayerPlan& l) {
  return l.snapshot_shared && l.shared && !*l.snapshot_shared;
}

nlohmann::json to_json(const Plan& p) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : p.layers) {
    nlohmann::json j = {{"digest", l.digest.str()},
                        {"diff_id", l.diff_id.str()},
                        {"chain_id", l.chain_id.str()},
                        {"media_type", l.media_type},
                        {"size", l.size},
                        {"status", l.shared ? "shared" : "new"}};
    if (l.snapshot_shared) {
      j["snapshot_shared"] = *l.snapshot_shared;
    }
    layers.push_back(j);
  }
  return {
      {"image", p.image},
      {"digest", p.digest.str()},
      {"platform", oci::platform_str(p.platform)},
      {"baseline", p.baseline},
      {"manifest",
       {{"digest", p.manifest.digest.str()},
        {"size", p.manifest.size},
        {"status", p.manifest_shared ? "shared" : "new"}}},
      {"config",
       {{"digest", p.config.digest.str()}, {"size", p.config.size}, {"status", p.config_shared ? "shared" : "new"}}},
      {"layers", layers},
      {"layers_new", p.layers_new},
      {"layers_shared", static_cast<std::int64_t>(p.layers.size()) - p.layers_new},
      {"bytes_total", p.bytes_total},
      {"bytes_to_move", p.bytes_to_move},
      {"bytes_shared", p.bytes_total - p.bytes_to_move}};
}

} // namespace warm
