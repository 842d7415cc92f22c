#pragma once
// What a signed build attests: the SLSA provenance of a build (from its report) and
// the SBOM of any image (dpkg and Python packages found in its layers, whiteouts
// honoured, and one component per data/files layer). Layer scans are cached by layer
// digest, so a base is read once however many images stand on it.
#include "builder/build.hpp"
#include "layers/packages.hpp"
#include "oci/image.hpp"
#include "signing/provenance.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace builder {

struct ProvenanceContext {
  std::string tool_version;
  std::string invocation_id;
  std::string started_on; // RFC 3339 UTC
  std::string finished_on;
  // The built image's labels: the io.paddle-image.* ones are the compatibility facts
  // the build resolved (CUDA, cuDNN, driver minimum, GPU architectures, Paddle).
  std::map<std::string, std::string> labels;
  // What the user asked for: -o and --push as given (none: the default layout), --tag.
  std::vector<oci::ImageRef> outputs;
  std::vector<std::string> tags;
};

signing::ProvenanceInput build_provenance(const spec::BuildSpec& s, const BuildOptions& o, const BuildReport& rep,
                                          const ProvenanceContext& ctx);

struct SbomOptions {
  std::filesystem::path cache_dir; // the image's file tree under CACHE/base-view/ (layers::cached_view)
  bool store_view = true;          // cache the image's view (a build leaves it out: its base's is cached)
  bool scan_base = true;           // false: the base's layers are left out
  // The base's layer digests when the caller knows them (a build does); otherwise the
  // layers the config's history does not name as paddle-image's count as the base.
  std::set<std::string> base_layers;
  std::string image_name; // "host/repo" or the image's title
  std::string created;    // RFC 3339 UTC (SOURCE_DATE_EPOCH)
  std::string tool_version;
  std::function<void(const std::string&)> info = [](const std::string&) {};
};

// The SBOM facts of the image manifest m of img (an image manifest, not an index).
signing::SbomInput image_sbom(const oci::Image& img, const oci::ManifestBlob& m, const SbomOptions& opt);

} // namespace builder
