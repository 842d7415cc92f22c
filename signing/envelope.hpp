#pragma once
// The signed documents cosign-compatible verifiers read: the simple-signing payload
// of a `.sig` layer (containers/image's strict field set), in-toto Statements v1, and
// DSSE envelopes with their pre-authentication encoding (PAE).
#include "oci/digest.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace signing {

inline constexpr const char* k_simple_signing_media_type = "application/vnd.dev.cosign.simplesigning.v1+json";
inline constexpr const char* k_dsse_media_type = "application/vnd.dsse.envelope.v1+json";
inline constexpr const char* k_signature_annotation = "dev.cosignproject.cosign/signature";
inline constexpr const char* k_predicate_type_annotation = "predicateType";
inline constexpr const char* k_in_toto_payload_type = "application/vnd.in-toto+json";
inline constexpr const char* k_statement_type = "https://in-toto.io/Statement/v1";
inline constexpr const char* k_slsa_provenance = "https://slsa.dev/provenance/v1";
inline constexpr const char* k_spdx_document = "https://spdx.dev/Document";
inline constexpr const char* k_cyclonedx_bom = "https://cyclonedx.org/bom";
inline constexpr const char* k_simple_signing_type = "cosign container image signature";

// {"critical":{"identity":{"docker-reference":REF},"image":{"docker-manifest-digest":D},
//  "type":"cosign container image signature"},"optional":null}, byte for byte.
std::string simple_signing_payload(const std::string& docker_reference, const oci::Digest& manifest);

struct SimpleSigning {
  std::string docker_reference;
  oci::Digest manifest;
};
// Parses a payload as strictly as containers/image does (exact key sets, the type
// string); throws util::Error(verification) saying what is wrong.
SimpleSigning parse_simple_signing(const std::string& payload);

// "DSSEv1 <len(type)> <type> <len(body)> <body>", lengths in decimal bytes.
std::string pae(const std::string& payload_type, const std::string& body);

struct DsseSignature {
  std::string keyid;
  std::string sig; // DER bytes (decoded)
};
struct Envelope {
  std::string payload_type;
  std::string payload; // decoded body
  std::vector<DsseSignature> signatures;
};
std::string envelope_json(const Envelope& e);
// Strict: payloadType and payload strings, payload standard base64, at least one
// signature with a base64 sig; throws util::Error(verification).
Envelope parse_envelope(const std::string& bytes);

// An in-toto Statement v1 about one image.
nlohmann::json statement(const std::string& subject_name, const oci::Digest& subject, const std::string& predicate_type,
                         const nlohmann::json& predicate);
// Checks a DSSE payload as the in-toto Statement v1 about `image` that an attestation
// annotated `predicate_type` must be (the _type, a subject naming image's digest, the
// same predicateType, a predicate object); returns the predicate. Throws
// util::Error(verification) saying what is wrong.
nlohmann::json parse_statement(const std::string& payload, const oci::Digest& image, const std::string& predicate_type);

} // namespace signing
