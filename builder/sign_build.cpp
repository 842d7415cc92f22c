#include "builder/sign_build.hpp"

#include "imageio/attach.hpp"
#include "signing/envelope.hpp"
#include "signing/sign.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <utility>

namespace builder {

using util::Error;
using util::ErrorKind;

std::string sbom_subject(const spec::BuildSpec& s, const std::string& identity,
                         const std::vector<oci::ImageRef>& outputs) {
  bool push_only = !outputs.empty() && std::all_of(outputs.begin(), outputs.end(), [](const oci::ImageRef& r) {
    return r.kind == oci::ImageRef::Kind::registry;
  });
  if (identity.empty() && push_only) {
    return outputs.front().name();
  }
  std::string name = identity.empty() ? s.name : identity;
  try {
    oci::ImageRef r = oci::ImageRef::parse(name);
    if (r.kind == oci::ImageRef::Kind::registry) {
      return r.name();
    }
  } catch (const Error&) {
    // Not a reference (a display name): used as written.
  }
  return name.empty() ? std::string("image") : name;
}

void check_signable(const std::vector<oci::ImageRef>& outputs) {
  bool signable = outputs.empty(); // the default layout
  for (const auto& r : outputs) {
    signable = signable || r.kind == oci::ImageRef::Kind::oci_layout || r.kind == oci::ImageRef::Kind::registry;
  }
  if (!signable) {
    bool docker = outputs.front().kind == oci::ImageRef::Kind::docker_archive;
    throw Error(ErrorKind::usage,
                std::string("--sign: ") + (docker ? "a docker-archive" : "an oci-archive") +
                    " cannot carry signatures, and archives are the only outputs",
                "add an OCI layout (-o oci:DIR) or a --push");
  }
}

signing::SbomInput built_image_sbom(const oci::Image& img, const BuildReport& r, const BuildOptions& o, bool scan_base,
                                    const std::string& image_name, const std::string& tool_version,
                                    const std::function<void(const std::string&)>& info) {
  SbomOptions so;
  so.cache_dir = o.cache_dir;
  so.scan_base = scan_base;
  so.store_view = false;
  for (const auto& l : r.layers) {
    if (l.kind == "base") {
      so.base_layers.insert(l.blob.digest.str());
    }
  }
  so.image_name = image_name;
  so.created = util::rfc3339_utc(o.source_date_epoch);
  so.tool_version = tool_version;
  so.info = info;
  signing::SbomInput in = image_sbom(img, img.root(), so);
  // What the files and data layers downloaded (url:), each by its URL and SHA-256: the
  // image's tree cannot tell them from copied files.
  for (const auto& l : r.layers) {
    for (const auto& d : l.sources.is_array() ? l.sources : nlohmann::json::array()) {
      if (d.contains("git")) {
        std::string repo = d.value("git", "");
        std::string name = repo.substr(repo.rfind('/') + 1);
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0) {
          name.resize(name.size() - 4);
        }
        signing::SbomComponent c;
        c.kind = "git";
        c.name = name;
        c.version = d.value("commit", "");
        c.purl = "pkg:generic/" + util::percent_encode(name) + "@" + c.version +
                 "?vcs_url=" + util::percent_encode("git+" + repo + "@" + c.version);
        c.location = d.value("to", "");
        c.layer = l.blob.digest.str();
        c.origin = "exported from git by " + l.kind + " layer '" + l.name + "'";
        in.components.push_back(c);
        continue;
      }
      std::string url = d.value("url", "");
      std::string name = url.substr(url.rfind('/') + 1);
      signing::SbomComponent c;
      c.kind = "download";
      c.name = name;
      c.purl = "pkg:generic/" + util::percent_encode(name) + "?checksum=sha256:" + d.value("sha256", "") +
               "&download_url=" + util::percent_encode(url);
      c.location = d.value("to", "");
      c.layer = l.blob.digest.str();
      c.sha256 = d.value("sha256", "");
      c.origin = "downloaded by " + l.kind + " layer '" + l.name + "'";
      in.components.push_back(c);
    }
  }
  return in;
}

std::map<std::string, std::string> image_labels(const oci::Image& img) {
  oci::Manifest m = oci::manifest_from_json(oci::parse_json(img.root().bytes, "the built manifest"));
  return oci::read_config(img, m).config.labels;
}

namespace {

// One output to sign: what to open, the identity to sign for, and the SBOM's name
// for it.
struct SignRef {
  oci::ImageRef ref;
  std::string identity, sbom_name;
};

// --identity names what layouts are signed for; a push is opened by digest (a tag moved
// meanwhile does not matter) and signed for its own host/repo:tag. A push without
// --identity is described as its own repository (what `paddle-image sbom REF` names),
// each push target its own, not the first one's. Layouts come first, as published.
std::vector<SignRef> sign_refs(const std::vector<imageio::Published>& published, const std::string& identity,
                               const std::string& image_name) {
  std::vector<SignRef> refs;
  for (const auto& p : published) {
    if (!p.signable()) {
      continue;
    }
    for (oci::ImageRef r : p.tagged()) {
      if (r.kind == oci::ImageRef::Kind::registry) {
        std::string signed_for = r.name() + (r.tag.empty() ? "" : ":" + r.tag);
        r.digest = p.digest.str();
        refs.push_back({r, signed_for, identity.empty() ? r.name() : image_name});
      } else {
        refs.push_back({r, identity, image_name});
      }
    }
  }
  return refs;
}

// The provenance and the SBOM(s) --sbom-format asks for, the SBOM named `sbom_name`.
std::vector<std::pair<std::string, nlohmann::json>> predicates_for(const nlohmann::json& provenance,
                                                                   const signing::SbomInput& sbom,
                                                                   const std::string& sbom_name,
                                                                   const std::string& format) {
  signing::SbomInput named = sbom;
  named.image_name = sbom_name;
  std::vector<std::pair<std::string, nlohmann::json>> predicates = {{signing::k_slsa_provenance, provenance}};
  if (format == "spdx" || format == "both") {
    predicates.emplace_back(signing::k_spdx_document, signing::spdx_document(named));
  }
  if (format == "cyclonedx" || format == "both") {
    predicates.emplace_back(signing::k_cyclonedx_bom, signing::cyclonedx_bom(named));
  }
  return predicates;
}

// Signs one output and attests each predicate there.
nlohmann::json sign_one(const SignRef& r, const BuildReport& rep,
                        const std::vector<std::pair<std::string, nlohmann::json>>& predicates,
                        const signing::PrivateKey& key, const SignOutputsOptions& opt) {
  const std::string text = r.ref.str();
  imageio::SignTarget t = imageio::open_sign_target(r.ref, opt.connect, r.identity, true);
  if (t.digest != rep.manifest.digest) {
    throw Error(ErrorKind::input,
                text + " was re-tagged while the build ran: it holds " + t.digest.str() +
                    ", not the image just built (" + rep.manifest.digest.str() + "); nothing was signed there",
                "build again, or sign the built digest with 'paddle-image sign'");
  }
  auto sig = util::with_context("signing " + text,
                                [&] { return signing::sign_image(*t.store, t.digest, t.identity, key, t.ref.str()); });
  nlohmann::json atts = nlohmann::json::array();
  for (const auto& entry : predicates) {
    const auto& type = entry.first;
    auto at = util::with_context("attesting " + text, [&] {
      return signing::attest_image(*t.store, t.digest, t.subject_name, type, entry.second, key, t.ref.str());
    });
    atts.push_back({{"predicate_type", type}, {"layer", at.layer.str()}, {"added", at.added}});
  }
  opt.info("signed " + text + " as " + t.identity + " (provenance and SBOM attached)");
  return {{"reference", text},
          {"identity", t.identity},
          {"signature", sig.layer.str()},
          {"signature_tag", sig.tag},
          {"attestations", atts}};
}

} // namespace

nlohmann::json sign_outputs(const spec::BuildSpec& s, const BuildOptions& o, const BuildReport& rep,
                            const std::vector<imageio::Published>& published, const signing::SbomInput& sbom,
                            const signing::PrivateKey& key, const ProvenanceContext& ctx,
                            const SignOutputsOptions& opt) {
  nlohmann::json result = nlohmann::json::array();
  std::vector<SignRef> refs = sign_refs(published, opt.identity, sbom.image_name);
  if (refs.empty()) {
    return result;
  }
  nlohmann::json provenance = signing::provenance_predicate(build_provenance(s, o, rep, ctx));
  for (const auto& r : refs) {
    result.push_back(sign_one(r, rep, predicates_for(provenance, sbom, r.sbom_name, opt.sbom_format), key, opt));
  }
  return result;
}

} // namespace builder
