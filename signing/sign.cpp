#include "signing/sign.hpp"

#include "oci/layout.hpp"
#include "signing/envelope.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <algorithm>

namespace signing {

using util::Error;
using util::ErrorKind;

namespace {

std::string tag_for(const oci::Digest& image, const std::string& suffix) {
  return image.algorithm + "-" + image.hex + suffix;
}

oci::Descriptor blob_descriptor(const std::string& media_type, const std::string& bytes) {
  oci::Descriptor d;
  d.media_type = media_type;
  d.digest = oci::Digest::sha256(util::sha256_hex(bytes));
  d.size = static_cast<std::int64_t>(bytes.size());
  return d;
}

std::string annotation(const oci::Descriptor& d, const std::string& key) {
  auto it = d.annotations.find(key);
  return it == d.annotations.end() ? std::string() : it->second;
}

bool verifies(const PublicKey& key, const std::string& data, const std::string& b64sig) {
  std::string der;
  return util::base64_decode(b64sig, der) && !der.empty() && key.verify(data, der);
}

// Whether an envelope's statement is `payload` and one of its signatures is key's.
bool envelope_signed_by(oci::AttachmentStore& store, const oci::Descriptor& layer, const std::string& payload,
                        const PublicKey& key) {
  try {
    Envelope e = parse_envelope(store.read_small(layer));
    if (e.payload != payload) {
      return false;
    }
    for (const auto& s : e.signatures) {
      if (key.verify(pae(e.payload_type, e.payload), s.sig)) {
        return true;
      }
    }
  } catch (const Error&) {
    // A foreign, missing or damaged envelope under the tag is not ours: append beside it.
  }
  return false;
}

// A registry or network failure while reading an attachment is not a verdict on it:
// it keeps its own exit code (5 auth, 6 network, 7 registry) instead of becoming a
// failed verification (11), so a 404 or a 503 after every retry is reported as what it is.
void rethrow_transport(const Error& e) {
  if (e.kind() == ErrorKind::auth || e.kind() == ErrorKind::network || e.kind() == ErrorKind::registry) {
    throw; // the exception being handled, whole (not a sliced copy)
  }
}

// The layers of the attachment manifests of `image` under `suffix` (layouts and
// registries report them through Image::attachments). A manifest that cannot be read
// or is not an image manifest is a failed verification, reported in `problems`.
std::vector<oci::Descriptor> attached_layers(const oci::Image& img, const oci::Digest& image, const std::string& suffix,
                                             std::vector<std::string>& problems) {
  std::vector<oci::Descriptor> out;
  std::string want = tag_for(image, suffix);
  for (const auto& a : img.attachments(image)) {
    if (a.tag != want) {
      continue;
    }
    try {
      for (auto& l : oci::attachment_layers(img.manifest(a.descriptor), img.name() + ":" + want)) {
        out.push_back(std::move(l));
      }
    } catch (const Error& e) {
      rethrow_transport(e);
      problems.push_back(a.descriptor.digest.str() + ": " + e.what());
    }
  }
  return out;
}

} // namespace

std::string reference_repository(const std::string& docker_reference) {
  std::string r = docker_reference;
  auto at = r.find('@');
  if (at != std::string::npos) {
    r = r.substr(0, at);
  }
  auto slash = r.rfind('/');
  auto colon = r.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    r = r.substr(0, colon);
  }
  return r;
}

namespace {

// An identity "host/repo:tag" must equal the docker-reference; "host/repo" (no tag)
// accepts any tag of that repository; an empty identity accepts anything.
bool identity_matches(const std::string& identity, const std::string& docker_reference) {
  if (identity.empty() || identity == docker_reference) {
    return true;
  }
  bool repository_only = identity == reference_repository(identity);
  return repository_only && reference_repository(docker_reference) == identity;
}

} // namespace

Added sign_image(oci::AttachmentStore& store, const oci::Digest& image, const std::string& docker_reference,
                 const PrivateKey& key, const std::string& name) {
  std::string payload = simple_signing_payload(docker_reference, image);
  oci::Descriptor layer = blob_descriptor(k_simple_signing_media_type, payload);
  Added out;
  out.tag = tag_for(image, ".sig");
  out.layer = layer.digest;
  PublicKey pub = key.public_key();
  if (auto have = store.tagged(out.tag)) {
    for (const auto& l : oci::attachment_layers(*have, name + ":" + out.tag)) {
      if (l.digest == layer.digest && verifies(pub, payload, annotation(l, k_signature_annotation))) {
        out.attachment = have->digest;
        return out;
      }
    }
  }
  layer.annotations[k_signature_annotation] = util::base64_encode(key.sign(payload));
  oci::MergeResult r = oci::add_attachment_layers(store, out.tag, {{layer, payload}}, name);
  out.added = r.changed;
  out.attachment = r.manifest.digest;
  return out;
}

Added attest_image(oci::AttachmentStore& store, const oci::Digest& image, const std::string& subject_name,
                   const std::string& predicate_type, const nlohmann::json& predicate, const PrivateKey& key,
                   const std::string& name) {
  std::string body = statement(subject_name, image, predicate_type, predicate).dump();
  Added out;
  out.tag = tag_for(image, ".att");
  PublicKey pub = key.public_key();
  if (auto have = store.tagged(out.tag)) {
    for (const auto& l : oci::attachment_layers(*have, name + ":" + out.tag)) {
      if (l.media_type == k_dsse_media_type && annotation(l, k_predicate_type_annotation) == predicate_type &&
          envelope_signed_by(store, l, body, pub)) {
        out.layer = l.digest;
        out.attachment = have->digest;
        return out;
      }
    }
  }
  Envelope e;
  e.payload_type = k_in_toto_payload_type;
  e.payload = body;
  e.signatures.push_back({"", key.sign(pae(e.payload_type, e.payload))});
  std::string envelope = envelope_json(e);
  oci::Descriptor layer = blob_descriptor(k_dsse_media_type, envelope);
  layer.annotations[k_predicate_type_annotation] = predicate_type;
  layer.annotations[k_signature_annotation] = "";
  out.layer = layer.digest;
  oci::MergeResult r = oci::add_attachment_layers(store, out.tag, {{layer, envelope}}, name);
  out.added = r.changed;
  out.attachment = r.manifest.digest;
  return out;
}

std::string predicate_uri(const std::string& kind) {
  if (kind == "slsa" || kind == "slsaprovenance" || kind == "slsaprovenance1" || kind == k_slsa_provenance) {
    return k_slsa_provenance;
  }
  if (kind == "spdx" || kind == "spdxjson" || kind == k_spdx_document) {
    return k_spdx_document;
  }
  if (kind == "cyclonedx" || kind == k_cyclonedx_bom) {
    return k_cyclonedx_bom;
  }
  // Any other predicate type by its URI, as cosign's --type takes one.
  if ((kind.rfind("https://", 0) == 0 || kind.rfind("http://", 0) == 0) && kind.size() > 8 &&
      kind.find_first_of(" \t\r\n") == std::string::npos) {
    return kind;
  }
  throw Error(ErrorKind::usage, "unknown attestation type '" + util::escape_bytes(kind) + "'",
              "use slsa (slsaprovenance1), spdx (spdxjson), cyclonedx or a predicate type URI (https://...)");
}

namespace {

// One layer of the signature manifest: a simple-signing payload this key signed, for
// this digest and the identity asked for.
VerifiedSignature check_signature(const oci::Image& img, const oci::Digest& image, const PublicKey& key,
                                  const VerifyOptions& opt, const oci::Descriptor& l) {
  VerifiedSignature v;
  v.layer = l.digest;
  if (l.media_type != k_simple_signing_media_type) {
    v.problem = "layer media type " + l.media_type + " is not a simple-signing payload";
    return v;
  }
  std::string payload;
  try {
    payload = oci::read_small_blob(img, l, 1 << 20);
  } catch (const Error& e) {
    rethrow_transport(e);
    v.problem = std::string("payload unreadable: ") + e.what();
    return v;
  }
  if (!verifies(key, payload, annotation(l, k_signature_annotation))) {
    v.foreign = true;
    v.problem = "the signature does not verify with this key";
    return v;
  }
  try {
    SimpleSigning s = parse_simple_signing(payload);
    v.docker_reference = s.docker_reference;
    if (s.manifest != image) {
      v.problem = "the payload signs " + s.manifest.str() + ", not " + image.str();
    } else if (!identity_matches(opt.identity, s.docker_reference)) {
      v.problem = "the payload's docker-reference is '" + s.docker_reference + "', not '" + opt.identity + "'";
    } else {
      v.ok = true;
    }
  } catch (const Error& e) {
    v.problem = e.what();
  }
  return v;
}

// One layer of the attestation manifest: a DSSE envelope of an in-toto statement about
// this digest, signed by this key.
VerifiedAttestation check_attestation(const oci::Image& img, const oci::Digest& image, const PublicKey& key,
                                      const oci::Descriptor& l) {
  VerifiedAttestation v;
  v.layer = l.digest;
  v.predicate_type = annotation(l, k_predicate_type_annotation);
  try {
    if (l.media_type != k_dsse_media_type) {
      throw Error(ErrorKind::verification, "layer media type " + l.media_type + " is not a DSSE envelope");
    }
    std::string blob = oci::read_small_blob(img, l, 64 << 20);
    Envelope e = parse_envelope(blob);
    if (e.payload_type != k_in_toto_payload_type) {
      throw Error(ErrorKind::verification, "payloadType is '" + e.payload_type + "'");
    }
    bool signed_ok = false;
    for (const auto& s : e.signatures) {
      signed_ok = signed_ok || key.verify(pae(e.payload_type, e.payload), s.sig);
    }
    if (!signed_ok) {
      v.foreign = true;
      throw Error(ErrorKind::verification, "no envelope signature verifies with this key");
    }
    v.predicate = parse_statement(e.payload, image, v.predicate_type);
    v.ok = true;
  } catch (const Error& e) {
    // The registry's own failures (unreachable, refused, credentials) keep their
    // exit codes (5-7); only what was read and found wanting fails verification.
    rethrow_transport(e);
    v.problem = e.what();
  }
  return v;
}

// The layer to blame among those `pick` selects: one this key signed that is wrong
// (another digest, another reference) before one it did not sign at all (another
// key's, or tampered with).
template <typename Items, typename Pick> std::string blame(const Items& items, const Pick& pick) {
  std::string fallback;
  for (const auto& i : items) {
    if (i.problem.empty() || !pick(i)) {
      continue;
    }
    if (!i.foreign) {
      return i.layer.str() + ": " + i.problem;
    }
    if (fallback.empty()) {
      fallback = i.layer.str() + ": " + i.problem;
    }
  }
  return fallback;
}

template <typename Items> std::string first_problem(const Items& items) {
  return blame(items, [](const auto&) { return true; });
}

// The verdict on the manifests and the signatures: damaged manifests, then no
// signature, then no good one (empty when one good signature is there).
std::string signature_failure(const oci::Image& img, const oci::Digest& image, const VerifyReport& rep,
                              const std::vector<std::string>& sig_problems,
                              const std::vector<std::string>& att_problems) {
  bool sig_ok = false;
  for (const auto& s : rep.signatures) {
    sig_ok = sig_ok || s.ok;
  }
  if (!sig_problems.empty()) {
    return img.name() + ": the signature manifest of " + image.str() + " is damaged (" + sig_problems.front() + ")";
  }
  if (!att_problems.empty()) {
    return img.name() + ": the attestation manifest of " + image.str() + " is damaged (" + att_problems.front() + ")";
  }
  if (rep.signatures.empty()) {
    return img.name() + ": no signatures for " + image.str() + " (no " + tag_for(image, ".sig") + ")";
  }
  if (!sig_ok) {
    return img.name() + ": no valid signature for " + image.str() + " (" + first_problem(rep.signatures) + ")";
  }
  return {};
}

// The predicate types that need a valid attestation: those asked for, and with
// check_present every type the image carries (docs/signing.md, "What verify checks",
// rule 3). An envelope whose signature does not verify may be another key's or this
// key's, tampered with: nothing tells them apart, so it never excuses its type. A key
// that attested nothing verifies a signature with --attestations none.
std::vector<std::string> wanted_attestations(const VerifyReport& rep, const VerifyOptions& opt) {
  std::vector<std::string> wanted = opt.attestations;
  if (opt.check_present) {
    for (const auto& a : rep.attestations) {
      if (std::find(wanted.begin(), wanted.end(), a.predicate_type) == wanted.end()) {
        wanted.push_back(a.predicate_type);
      }
    }
  }
  return wanted;
}

// The verdict on predicate type `want`: missing, or no attestation of it valid (empty
// when one is).
std::string attestation_failure(const oci::Image& img, const oci::Digest& image, const VerifyReport& rep,
                                const std::string& want, const VerifyOptions& opt) {
  bool found = false, good = false, unsigned_here = false;
  for (const auto& a : rep.attestations) {
    if (a.predicate_type == want) {
      found = true;
      good = good || a.ok;
      unsigned_here = unsigned_here || a.foreign;
    }
  }
  std::string problem = blame(rep.attestations, [&](const VerifiedAttestation& a) { return a.predicate_type == want; });
  if (!found) {
    // A damaged layer's annotation may be what is missing: name its problem too.
    std::string other = first_problem(rep.attestations);
    return img.name() + ": no " + want + " attestation for " + image.str() + (other.empty() ? "" : " (" + other + ")");
  }
  if (!good) {
    return img.name() + ": the " + want + " attestation of " + image.str() + " is not valid (" + problem + ")" +
           (unsigned_here && opt.attestations.empty()
                ? "; a key that attested nothing verifies the signature alone with --attestations none"
                : "");
  }
  return {};
}

} // namespace

VerifyReport verify_image(const oci::Image& img, const oci::Digest& image, const PublicKey& key,
                          const VerifyOptions& opt) {
  VerifyReport rep;
  rep.image = image;
  std::vector<std::string> sig_problems, att_problems;
  for (const auto& l : attached_layers(img, image, ".sig", sig_problems)) {
    rep.signatures.push_back(check_signature(img, image, key, opt, l));
  }
  for (const auto& l : attached_layers(img, image, ".att", att_problems)) {
    rep.attestations.push_back(check_attestation(img, image, key, l));
  }
  // The verdict: one good signature, and each attestation asked for.
  rep.failure = signature_failure(img, image, rep, sig_problems, att_problems);
  for (const auto& want : wanted_attestations(rep, opt)) {
    if (!rep.failure.empty()) {
      break;
    }
    rep.failure = attestation_failure(img, image, rep, want, opt);
  }
  rep.ok = rep.failure.empty();
  return rep;
}

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json sigs = nlohmann::json::array(), atts = nlohmann::json::array();
  for (const auto& s : signatures) {
    nlohmann::json j = {{"layer", s.layer.str()}, {"docker_reference", s.docker_reference}, {"verified", s.ok}};
    if (!s.problem.empty()) {
      j["problem"] = s.problem;
    }
    sigs.push_back(j);
  }
  for (const auto& a : attestations) {
    nlohmann::json j = {{"layer", a.layer.str()}, {"predicate_type", a.predicate_type}, {"verified", a.ok}};
    if (!a.problem.empty()) {
      j["problem"] = a.problem;
    }
    atts.push_back(j);
  }
  nlohmann::json j = {{"digest", image.str()}, {"verified", ok}, {"signatures", sigs}, {"attestations", atts}};
  if (!failure.empty()) {
    j["failure"] = failure;
  }
  return j;
}

} // namespace signing
