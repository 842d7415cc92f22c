#pragma once
// `build --sign`: the checks made before a signed build starts, the SBOM of the image
// as the build assembled it, and the signing of every output that can carry a
// signature (each layout tag, each pushed tag) with the build's provenance and SBOM
// attached, all for the one manifest digest.
#include "builder/build.hpp"
#include "builder/supply_chain.hpp"
#include "imageio/publish.hpp"
#include "imageio/source.hpp"
#include "oci/reference.hpp"
#include "signing/keys.hpp"
#include "spec/spec.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace builder {

// The SBOM's name for the image: `identity` (--identity); else, when every output is a
// push, the pushed repository (what `paddle-image sbom REF` names, so the two match
// byte for byte); else the spec's image name ("image" without one).
std::string sbom_subject(const spec::BuildSpec& s, const std::string& identity,
                         const std::vector<oci::ImageRef>& outputs);

// A usage error when the only outputs are archives (docker- or oci-), which cannot
// carry signatures (no output at all means the default layout: signable).
void check_signable(const std::vector<oci::ImageRef>& outputs);

// The SBOM of a signed build: the image as assembled (its own layers from the layer
// cache), the base's layers taken from the report (left out with
// `scan_base` false), named `image_name`, dated by the build's SOURCE_DATE_EPOCH.
signing::SbomInput built_image_sbom(const oci::Image& img, const BuildReport& r, const BuildOptions& o, bool scan_base,
                                    const std::string& image_name, const std::string& tool_version,
                                    const std::function<void(const std::string&)>& info);
// The labels of an image's config (the provenance records the compatibility facts).
std::map<std::string, std::string> image_labels(const oci::Image& img);

struct SignOutputsOptions {
  std::string identity;     // --identity: what layout outputs are signed for
  std::string sbom_format;  // spdx, cyclonedx or both
  imageio::Connect connect; // the pushes' registry (with the command's credentials)
  std::function<void(const std::string&)> info = [](const std::string&) {};
};

// Signs every layout and registry the image was published to, under each tag written,
// and attests the provenance and SBOM there; an output re-tagged to another digest
// while the build ran is an input error and nothing is signed there. Returns one JSON
// object per signed reference.
nlohmann::json sign_outputs(const spec::BuildSpec& s, const BuildOptions& o, const BuildReport& rep,
                            const std::vector<imageio::Published>& published, const signing::SbomInput& sbom,
                            const signing::PrivateKey& key, const ProvenanceContext& ctx,
                            const SignOutputsOptions& opt);

} // namespace builder
