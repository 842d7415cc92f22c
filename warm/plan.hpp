#pragma once
// `warm plan`: which bytes a node must fetch for an image. A node's containerd keeps
// blobs by digest (content store) and unpacked layers by chain id (snapshots), so a
// layer is shared when the node (--have) or an image it already runs (--against)
// holds the same compressed blob; its snapshot is shared only when the whole chain
// below it is the same.
#include "oci/image.hpp"
#include "warm/have.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace warm {

// OCI chain ids: chain(L0) = diff_id(L0); chain(Ln) = sha256(chain(Ln-1) + " " + diff_id(Ln)).
std::vector<oci::Digest> chain_ids(const std::vector<oci::Digest>& diff_ids);

// What the node is compared with.
struct Baseline {
  std::string what;                // "nothing", "--have FILE", "--against REF"
  std::set<std::string> blobs;     // digests the node holds
  std::set<std::string> chain_ids; // snapshots the node holds (known only with --against)
  bool knows_snapshots = false;
};

// --against and --have are two baselines: giving both is a usage error.
void check_one_baseline(const std::string& against, const std::string& have);
Baseline empty_baseline();
Baseline baseline_from_have(const HaveList& have);
// The manifest, config and layers of an image the node already has (its platform).
Baseline baseline_from_image(const oci::Image& img, const oci::CopyOptions& opt);

struct LayerPlan {
  oci::Digest digest;
  oci::Digest diff_id;
  oci::Digest chain_id;
  std::string media_type;
  std::int64_t size = 0;
  bool shared = false;                 // the node has the blob
  std::optional<bool> snapshot_shared; // the node has the unpacked chain (--against only)
};

// The node has the blob but not the unpacked chain (a layer below it differs): it
// unpacks the layer again ("shared*" in warm plan's table).
bool unpacks_again(const LayerPlan& l);

struct Plan {
  std::string image;  // as named
  oci::Digest digest; // the platform's manifest
  oci::Platform platform;
  std::string baseline; // Baseline::what
  oci::Descriptor manifest;
  bool manifest_shared = false;
  oci::Descriptor config;
  bool config_shared = false;
  std::vector<LayerPlan> layers;
  std::int64_t bytes_total = 0;   // manifest + config + layers
  std::int64_t bytes_to_move = 0; // of those, what the node lacks
  std::int64_t layers_new = 0;
};

Plan make_plan(const oci::Image& img, const oci::CopyOptions& opt, const Baseline& base);
nlohmann::json to_json(const Plan& p);

} // namespace warm
