#pragma once
// Signing and verifying images the way cosign does, on any place that holds them: a
// simple-signing signature under "sha256-<hex>.sig", in-toto attestations in DSSE
// envelopes under "sha256-<hex>.att", appended to what the tag already holds.
#include "oci/attachment.hpp"
#include "oci/image.hpp"
#include "signing/keys.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace signing {

struct Added {
  std::string tag;        // "sha256-<hex>.sig" / ".att"
  oci::Digest layer;      // the payload or envelope blob
  bool added = false;     // false: an equal one from this key was there already
  oci::Digest attachment; // the attachment manifest the tag holds afterwards
};

// Signs `image` (a manifest or index digest) for docker_reference ("host/repo:tag").
// Idempotent: a signature of the same payload that verifies with this key is kept as
// it is. `name` names the place in messages.
Added sign_image(oci::AttachmentStore& store, const oci::Digest& image, const std::string& docker_reference,
                 const PrivateKey& key, const std::string& name);

// Attests `image` with a predicate (SLSA provenance, SPDX, CycloneDX): an in-toto
// Statement v1 whose subject is {subject_name, image}, in a DSSE envelope.
Added attest_image(oci::AttachmentStore& store, const oci::Digest& image, const std::string& subject_name,
                   const std::string& predicate_type, const nlohmann::json& predicate, const PrivateKey& key,
                   const std::string& name);

// "slsa" | "spdx" | "cyclonedx" (and cosign's names slsaprovenance1, spdxjson) -> the
// URI; another http(s) URI is taken as it is; usage error otherwise.
std::string predicate_uri(const std::string& kind);

struct VerifyOptions {
  // The identity the signature must carry: "host/repo" (any tag of that repository)
  // or "host/repo:tag" (exactly). Empty: not checked.
  std::string identity;
  std::vector<std::string> attestations; // predicate URIs that must be present and valid
  // Every predicate type the image carries must have a valid attestation too (a
  // tampered SBOM fails verification even when only the signature was asked for).
  bool check_present = true;
};

struct VerifiedSignature {
  oci::Digest layer;
  std::string docker_reference;
  bool ok = false;
  bool foreign = false; // the signature does not verify with this key
  std::string problem;  // why it did not count
};

struct VerifiedAttestation {
  oci::Digest layer;
  std::string predicate_type;
  bool ok = false;
  bool foreign = false; // well-formed, but no signature verifies with this key
  std::string problem;
  nlohmann::json predicate; // when ok
};

struct VerifyReport {
  oci::Digest image;
  std::vector<VerifiedSignature> signatures;
  std::vector<VerifiedAttestation> attestations;
  bool ok = false;
  std::string failure; // what failed, for which digest (empty when ok)
  nlohmann::json to_json() const;
};

// Checks the image's signatures (at least one must verify with key, name image's
// digest and match the identity) and the attestations asked for (each must be present
// with a valid signature, this subject and its predicate type).
VerifyReport verify_image(const oci::Image& img, const oci::Digest& image, const PublicKey& key,
                          const VerifyOptions& opt);

// "host/repo" of a docker reference "host/repo:tag" (no digest).
std::string reference_repository(const std::string& docker_reference);

} // namespace signing
