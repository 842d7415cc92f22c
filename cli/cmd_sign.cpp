// key generate, sign, attest, verify, sign-blob, verify-blob, attest-blob,
// verify-blob-attestation, sbom: cosign-compatible signatures and
// attestations on images in registries and OCI layouts (docs/signing.md).
#include "builder/supply_chain.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/registry_flags.hpp"
#include "cli/signing_flags.hpp"
#include "cli/version.hpp"
#include "signing/blob.hpp"
#include "signing/envelope.hpp"
#include "signing/sign.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <cerrno>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cli {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

struct KeyGenArgs {
  std::string output = "cosign";
  std::string passphrase_file;
  bool allow_empty = false;
  bool force = false;
  bool json = false;
};

// Writes a key file atomically with `mode`. Without force the name is taken with
// link(), which fails when it exists, so a file created meanwhile is never replaced.
void write_key_file(const fs::path& path, const std::string& text, mode_t mode, bool force) {
  util::AtomicFile f(path);
  if (::fchmod(f.fd(), mode) != 0) {
    util::throw_errno("setting the mode of " + path.string());
  }
  f.write(text);
  if (force) {
    f.commit();
    return;
  }
  if (::fsync(f.fd()) != 0) {
    util::throw_errno("writing " + path.string());
  }
  if (::link(f.temp_path().c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) {
      throw Error(ErrorKind::usage, path.string() + " exists; not overwriting it",
                  "choose another --output, or pass --force to replace it");
    }
    util::throw_errno("creating " + path.string());
  }
  util::fsync_dir(path.parent_path().empty() ? fs::path(".") : path.parent_path());
  // The temporary name goes with f (never committed); the linked name stays.
}

int run_key_generate(const KeyGenArgs& a) {
  Output out = Output::detect(a.json, false);
  fs::path key = a.output + ".key";
  fs::path pub = a.output + ".pub";
  std::error_code ec;
  for (const auto& p : {key, pub}) {
    if (!a.force && fs::exists(fs::symlink_status(p, ec))) {
      throw Error(ErrorKind::usage, p.string() + " exists; not overwriting it",
                  "choose another --output, or pass --force to replace it");
    }
  }
  bool explicit_empty = false;
  std::string pass = read_passphrase(a.passphrase_file, true, &explicit_empty);
  if (pass.empty() && !explicit_empty && !a.allow_empty) {
    throw Error(ErrorKind::usage, "an empty passphrase leaves the private key unprotected",
                "give a passphrase, or ask for none explicitly with --allow-empty-passphrase (or COSIGN_PASSWORD=)");
  }
  signing::PrivateKey k = signing::PrivateKey::generate();
  std::string pem = k.to_cosign_pem(pass);
  ::explicit_bzero(pass.data(), pass.size());
  write_key_file(key, pem, 0600, a.force);
  write_key_file(pub, k.public_key().pem(), 0644, a.force);
  nlohmann::json j = {{"private_key", key.string()},
                      {"public_key", pub.string()},
                      {"fingerprint", "sha256:" + k.public_key().fingerprint()}};
  out.result(j,
             "Private key written to " + key.string() + " (mode 0600)\nPublic key written to " + pub.string() + "\n");
  return 0;
}

struct SignArgs {
  std::string ref;
  KeyFlags key;
  std::string identity;
  bool json = false;
  RegistryFlags flags;
};

nlohmann::json added_json(const signing::Added& a) {
  return {{"tag", a.tag}, {"layer", a.layer.str()}, {"added", a.added}, {"manifest", a.attachment.str()}};
}

int run_sign(const SignArgs& a) {
  Output out = Output::detect(a.json, false);
  signing::PrivateKey key = load_private_key(a.key);
  RegistrySession sess(a.flags, out);
  SignTarget t = open_sign_target(a.ref, sess, a.identity, true);
  signing::Added r = signing::sign_image(*t.store, t.digest, t.identity, key, t.ref.str());
  out.info((r.added ? "signed " : "already signed with this key: ") + t.shown() + " as " + t.identity);
  nlohmann::json j = {
      {"image", t.ref.str()}, {"digest", t.digest.str()}, {"identity", t.identity}, {"signature", added_json(r)}};
  out.result(j, t.shown() + " " + r.tag + "\n");
  return 0;
}

struct AttestArgs {
  std::string ref;
  KeyFlags key;
  std::string type;
  std::string predicate;
  std::string identity;
  bool json = false;
  RegistryFlags flags;
};

// attest and attest-blob: the --predicate document, a JSON object.
nlohmann::json read_predicate(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error(ErrorKind::input, "--predicate " + path + " does not exist or is not a file", "check the path");
  }
  nlohmann::json predicate = nlohmann::json::parse(util::read_file(path), nullptr, false);
  if (predicate.is_discarded() || !predicate.is_object()) {
    throw Error(ErrorKind::input, "--predicate " + path + " is not a JSON object",
                "pass the predicate document itself (e.g. the output of 'paddle-image sbom')");
  }
  return predicate;
}

int run_attest(const AttestArgs& a) {
  Output out = Output::detect(a.json, false);
  std::string uri = signing::predicate_uri(a.type);
  nlohmann::json predicate = read_predicate(a.predicate);
  signing::PrivateKey key = load_private_key(a.key);
  RegistrySession sess(a.flags, out);
  SignTarget t = open_sign_target(a.ref, sess, a.identity, true);
  signing::Added r = signing::attest_image(*t.store, t.digest, t.subject_name, uri, predicate, key, t.ref.str());
  out.info((r.added ? "attested " : "already attested with this key: ") + t.shown() + " (" + uri + ")");
  nlohmann::json j = {
      {"image", t.ref.str()}, {"digest", t.digest.str()}, {"predicate_type", uri}, {"attestation", added_json(r)}};
  out.result(j, t.shown() + " " + r.tag + "\n");
  return 0;
}

struct VerifyArgs {
  std::string ref;
  std::string key;
  std::string identity;
  std::vector<std::string> attestations;
  bool json = false;
  RegistryFlags flags;
};

// verify and verify-blob: a failed verification is reported, not thrown, so --json
// still prints the whole report (with "error" added) on stdout. Returns exit code 11.
int verification_failed(nlohmann::json& report, bool json, const std::string& failure) {
  if (json) {
    report["error"] = {{"kind", "verification"},
                       {"message", failure},
                       {"hint", ""},
                       {"exit_code", util::exit_code(ErrorKind::verification)}};
    std::cout << report.dump(2) << std::endl;
  }
  std::cerr << "paddle-image: error: verification failed: " << failure << "\n";
  return util::exit_code(ErrorKind::verification);
}

int run_verify(const VerifyArgs& a) {
  Output out = Output::detect(a.json, false);
  signing::PublicKey key = load_public_key(a.key);
  RegistrySession sess(a.flags, out);
  SignTarget t = open_sign_target(a.ref, sess, a.identity, false);
  signing::VerifyOptions opt;
  // The reference's repository (any tag of it) unless --identity names one exactly.
  opt.identity = a.identity.empty() ? signing::reference_repository(t.identity) : t.identity;
  for (const auto& kind : a.attestations) {
    if (kind == "none") {
      opt.check_present = false;
      continue;
    }
    opt.attestations.push_back(signing::predicate_uri(kind));
  }
  signing::VerifyReport rep = signing::verify_image(*t.image, t.digest, key, opt);
  nlohmann::json j = rep.to_json();
  j["image"] = t.ref.str();
  j["identity"] = opt.identity;
  j["key"] = "sha256:" + key.fingerprint();
  if (!rep.ok) {
    return verification_failed(j, a.json, rep.failure);
  }
  std::string text = "Verified " + t.shown() + "\n";
  for (const auto& s : rep.signatures) {
    if (s.ok) {
      text += "  signature " + s.layer.str() + " for " + s.docker_reference + "\n";
    }
  }
  for (const auto& at : rep.attestations) {
    text += "  attestation " + at.predicate_type + (at.ok ? "" : " (not valid: " + at.problem + ")") + "\n";
  }
  out.result(j, text);
  return 0;
}

// sign-blob / verify-blob: cosign's blob signature, base64 of the DER ECDSA P-256
// signature over the file's SHA-256, so `cosign verify-blob --key K --signature S FILE`
// accepts what sign-blob writes and the other way round. The file is hashed as it
// streams; it is never held whole.
std::string file_sha256_raw(const std::string& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    throw Error(ErrorKind::input, file + ": no such file (or not a regular file)", "name the file to sign or verify");
  }
  util::Sha256 h;
  util::read_file_chunks(file, [&](const char* d, std::size_t n) { h.update(d, n); });
  auto raw = h.finish_raw();
  return std::string(reinterpret_cast<const char*>(raw.data()), raw.size());
}

struct SignBlobArgs {
  std::string file;
  KeyFlags key;
  std::string output_signature;
  bool json = false;
};

int run_sign_blob(const SignBlobArgs& a) {
  Output out = Output::detect(a.json, false);
  signing::PrivateKey key = load_private_key(a.key);
  std::string digest = file_sha256_raw(a.file);
  std::string sig = util::base64_encode(key.sign_digest(digest));
  if (!a.output_signature.empty()) {
    util::write_file_atomic(a.output_signature, sig);
    out.info("wrote the signature of " + a.file + " to " + a.output_signature);
  }
  nlohmann::json j = {{"file", a.file},
                      {"sha256", util::hex_encode(digest)},
                      {"signature", sig},
                      {"key", "sha256:" + key.public_key().fingerprint()}};
  if (!a.output_signature.empty()) {
    j["signature_file"] = a.output_signature;
  }
  // As cosign: the base64 signature on stdout unless it went to a file.
  out.result(j, a.output_signature.empty() ? sig + "\n" : "");
  return 0;
}

struct VerifyBlobArgs {
  std::string file;
  std::string key;
  std::string signature;
  bool json = false;
};

int run_verify_blob(const VerifyBlobArgs& a) {
  Output out = Output::detect(a.json, false);
  signing::PublicKey key = load_public_key(a.key);
  std::error_code ec;
  if (!fs::is_regular_file(a.signature, ec)) {
    throw Error(ErrorKind::usage, "--signature " + a.signature + ": no such file",
                "give the file sign-blob --output-signature (or cosign sign-blob) wrote");
  }
  // A signature is under 4 KiB of base64: a larger file is refused by its size, never
  // read whole (a 1 GB file must not cost memory or time).
  constexpr std::uintmax_t k_max_signature_file = 64 * 1024;
  std::uintmax_t sig_size = fs::file_size(a.signature, ec);
  std::string text = !ec && sig_size <= k_max_signature_file ? util::read_file(a.signature) : std::string();
  std::string b64;
  for (char ch : text) {
    if (ch != '\n' && ch != '\r' && ch != ' ' && ch != '\t') {
      b64 += ch;
    }
  }
  std::string der;
  std::string digest = file_sha256_raw(a.file);
  nlohmann::json j = {{"file", a.file}, {"sha256", util::hex_encode(digest)}, {"key", "sha256:" + key.fingerprint()}};
  std::string failure;
  if (!ec && sig_size > k_max_signature_file) {
    failure = a.signature + " does not hold a base64 signature (" + std::to_string(sig_size) +
              " bytes; a signature is under 4 KiB)";
  } else if (b64.empty() || b64.size() > 4096 || !util::base64_decode(b64, der)) {
    failure = a.signature + " does not hold a base64 signature";
  } else if (!key.verify_digest(digest, der)) {
    failure = "the signature in " + a.signature + " does not verify " + a.file + " with " + a.key +
              " (another key signed it, or the file changed)";
  }
  j["verified"] = failure.empty();
  if (!failure.empty()) {
    return verification_failed(j, a.json, failure);
  }
  out.result(j, "Verified OK\n");
  return 0;
}

// attest-blob / verify-blob-attestation: cosign's blob attestations, an in-toto
// Statement about files (name and SHA-256) in a DSSE envelope, one envelope per line.
struct AttestBlobArgs {
  std::vector<std::string> files;
  KeyFlags key;
  std::string type;
  std::string predicate;
  std::string output_attestation;
  bool json = false;
};

int run_attest_blob(const AttestBlobArgs& a) {
  Output out = Output::detect(a.json, false);
  std::string uri = signing::predicate_uri(a.type);
  nlohmann::json predicate = read_predicate(a.predicate);
  std::vector<signing::FileSubject> subjects;
  nlohmann::json listed = nlohmann::json::array();
  for (const auto& f : a.files) {
    signing::FileSubject s{fs::path(f).filename().string(), util::hex_encode(file_sha256_raw(f))};
    for (const auto& other : subjects) {
      if (other.name == s.name) {
        throw Error(ErrorKind::usage, "two files named " + s.name + ": the subjects are named by file name",
                    "attest files with different names (or make one attestation per directory)");
      }
    }
    listed.push_back({{"name", s.name}, {"sha256", s.sha256}});
    subjects.push_back(std::move(s));
  }
  signing::PrivateKey key = load_private_key(a.key);
  std::string line = signing::attest_files(subjects, uri, predicate, key) + "\n";
  nlohmann::json j = {
      {"predicate_type", uri}, {"subjects", listed}, {"key", "sha256:" + key.public_key().fingerprint()}};
  if (a.output_attestation.empty()) {
    j["attestation"] = nlohmann::json::parse(line);
  } else {
    util::write_file_atomic(a.output_attestation, line);
    out.info("wrote the attestation (" + uri + ") of " + std::to_string(subjects.size()) + " file(s) to " +
             a.output_attestation);
    j["attestation_file"] = a.output_attestation;
  }
  // As cosign: the envelope on stdout unless it went to a file.
  out.result(j, a.output_attestation.empty() ? line : "");
  return 0;
}

struct VerifyBlobAttestationArgs {
  std::string file;
  std::string key;
  std::string signature;
  std::string type;
  bool json = false;
};

// The attestation file's text; "" with `failure` set when it is too large to be one.
std::string read_attestation_file(const std::string& path, std::string& failure) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw Error(ErrorKind::usage, "--signature " + path + ": no such file",
                "give the file attest-blob --output-attestation (or cosign attest-blob) wrote, e.g. "
                "paddle-image.intoto.jsonl");
  }
  // Envelopes of SBOMs run to megabytes; anything past 64 MiB is refused by its size.
  constexpr std::uintmax_t k_max_attestation_file = 64ULL << 20;
  std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > k_max_attestation_file) {
    failure = path + " is " + std::to_string(size) + " bytes: not an attestation file (at most 64 MiB)";
    return {};
  }
  return util::read_file(path);
}

int run_verify_blob_attestation(const VerifyBlobAttestationArgs& a) {
  Output out = Output::detect(a.json, false);
  signing::PublicKey key = load_public_key(a.key);
  std::string type = a.type.empty() ? std::string() : signing::predicate_uri(a.type);
  std::string failure;
  std::string text = read_attestation_file(a.signature, failure);
  std::string sha256 = util::hex_encode(file_sha256_raw(a.file));
  nlohmann::json j = {
      {"file", a.file}, {"sha256", sha256}, {"attestation_file", a.signature}, {"key", "sha256:" + key.fingerprint()}};
  signing::FileAttestation r;
  if (failure.empty()) {
    try {
      r = signing::verify_file_attestation(signing::read_attestations(text, a.signature), sha256, key, type, a.file,
                                           a.signature, a.key);
      failure = r.failure;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::verification) {
        throw;
      }
      failure = std::string(e.what()) + (e.hint().empty() ? "" : " (" + e.hint() + ")");
    }
  }
  j["verified"] = failure.empty();
  if (!r.predicate_type.empty()) {
    j["predicate_type"] = r.predicate_type;
  }
  if (!failure.empty()) {
    return verification_failed(j, a.json, failure);
  }
  j["subject"] = r.subject;
  j["predicate"] = r.predicate;
  out.result(j, "Verified OK: " + a.file + " is a subject of " + r.predicate_type + "\n");
  return 0;
}

struct SbomArgs {
  std::string ref;
  std::string format = "spdx";
  std::string output;
  std::string sbom_base = "scan";
  std::string cache_dir;
  bool quiet = false;
  RegistryFlags flags;
};

int run_sbom(const SbomArgs& a) {
  Output out = Output::detect(false, a.quiet);
  RegistrySession sess(a.flags, out);
  oci::ImageRef ref = oci::ImageRef::parse(a.ref);
  oci::ImagePtr img = open_image(ref, sess);
  oci::CopyOptions sel = sess.transfer_options();
  oci::ManifestBlob m = oci::select_platform(*img, sel);
  oci::Manifest man = oci::manifest_from_json(oci::parse_json(m.bytes, "manifest of " + a.ref));
  oci::ImageConfig cfg = oci::read_config(*img, man);
  builder::SbomOptions opt;
  opt.cache_dir = a.cache_dir.empty() ? default_cache_dir() : fs::path(a.cache_dir);
  opt.scan_base = a.sbom_base == "scan";
  opt.tool_version = version();
  opt.info = [&out](const std::string& line) { out.info(line); };
  auto title = cfg.config.labels.find("org.opencontainers.image.title");
  opt.image_name = ref.kind == oci::ImageRef::Kind::registry ? ref.name()
                   : title != cfg.config.labels.end()        ? title->second
                                                             : ref.str();
  // The document's time: the image's own creation time, so the same image gives the
  // same document.
  opt.created = cfg.created.empty() ? util::rfc3339_utc(0) : cfg.created;
  signing::SbomInput in = builder::image_sbom(*img, m, opt);
  nlohmann::json doc = a.format == "cyclonedx" ? signing::cyclonedx_bom(in) : signing::spdx_document(in);
  std::string text = doc.dump(2) + "\n";
  if (!a.output.empty()) {
    util::write_file_atomic(a.output, text);
    std::cerr << "SBOM (" << a.format << ", " << in.components.size() << " components) written to " << a.output << "\n";
    return 0;
  }
  std::cout << text;
  return 0;
}

// sign-blob, verify-blob, attest-blob, verify-blob-attestation: files, not images.
void add_blob_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  {
    auto a = std::make_shared<SignBlobArgs>();
    CLI::App* c = app.add_subcommand(
        "sign-blob", "Sign a file as cosign sign-blob does (base64 ECDSA P-256 over its SHA-256): a release archive");
    c->add_option("file", a->file, "The file to sign")->required();
    a->key.add(c, "Private key (cosign.key, or a PKCS#8/SEC1 EC PEM)");
    c->add_option("--output-signature", a->output_signature,
                  "Write the base64 signature to this file (default: print it)");
    c->add_flag("--json", a->json, "Print the result as JSON");
    actions.emplace_back(c, [a] { return run_sign_blob(*a); });
  }
  {
    auto a = std::make_shared<VerifyBlobArgs>();
    CLI::App* c = app.add_subcommand("verify-blob",
                                     "Verify a file's signature from sign-blob or cosign sign-blob with a public key");
    c->add_option("file", a->file, "The file the signature is for")->required();
    c->add_option("--key", a->key, "Public key (cosign.pub)")->required();
    c->add_option("--signature", a->signature, "The file holding the base64 signature")->required();
    c->add_flag("--json", a->json, "Print the verification result as JSON");
    actions.emplace_back(c, [a] { return run_verify_blob(*a); });
  }
  {
    auto a = std::make_shared<AttestBlobArgs>();
    CLI::App* c = app.add_subcommand(
        "attest-blob", "Attest files as cosign attest-blob does: a signed in-toto statement (DSSE) naming each file");
    c->add_option("file", a->files, "The files the statement is about (its subjects: name and SHA-256)")->required();
    a->key.add(c, "Private key (cosign.key, or a PKCS#8/SEC1 EC PEM)");
    c->add_option("--type", a->type,
                  "The predicate type: slsaprovenance1 (slsa), spdxjson (spdx), cyclonedx or a predicate URI")
        ->required();
    c->add_option("--predicate", a->predicate, "The predicate document (JSON)")->required();
    c->add_option("--output-attestation", a->output_attestation,
                  "Write the DSSE envelope to this file, one line (default: print it)");
    c->add_flag("--json", a->json, "Print the result as JSON");
    actions.emplace_back(c, [a] { return run_attest_blob(*a); });
  }
  {
    auto a = std::make_shared<VerifyBlobAttestationArgs>();
    CLI::App* c =
        app.add_subcommand("verify-blob-attestation",
                           "Verify a file's attestation from attest-blob or cosign attest-blob with a public key");
    c->add_option("file", a->file, "The file the attestation must name")->required();
    c->add_option("--key", a->key, "Public key (cosign.pub)")->required();
    c->add_option("--signature,--bundle", a->signature,
                  "The attestation file: DSSE envelopes, one per line (.intoto.jsonl), or a cosign bundle")
        ->required();
    c->add_option("--type", a->type,
                  "The predicate type it must have: slsaprovenance1 (slsa), spdxjson (spdx), cyclonedx or a URI "
                  "(default: any)");
    c->add_flag("--json", a->json, "Print the verification result (with the predicate) as JSON");
    actions.emplace_back(c, [a] { return run_verify_blob_attestation(*a); });
  }
}

} // namespace

void add_signing_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Action>>& actions) {
  {
    CLI::App* key = app.add_subcommand("key", "Signing keys (cosign format)");
    key->require_subcommand(1);
    auto a = std::make_shared<KeyGenArgs>();
    CLI::App* c =
        key->add_subcommand("generate", "Write an ECDSA P-256 key pair: PREFIX.key (encrypted) and PREFIX.pub");
    c->add_option("-o,--output", a->output, "File name prefix (default cosign: cosign.key and cosign.pub)");
    c->add_option("--passphrase-file", a->passphrase_file,
                  "Read the passphrase from this file (default $COSIGN_PASSWORD, else a prompt on a terminal)");
    c->add_flag("--allow-empty-passphrase", a->allow_empty, "Accept an empty passphrase (the key is then unprotected)");
    c->add_flag("-f,--force", a->force, "Replace existing key files");
    c->add_flag("--json", a->json, "Print the result as JSON");
    actions.emplace_back(c, [a] { return run_key_generate(*a); });
  }
  {
    auto a = std::make_shared<SignArgs>();
    CLI::App* c =
        app.add_subcommand("sign", "Sign an image (registry or oci:DIR[:TAG]) with a cosign-compatible signature");
    c->add_option("image", a->ref, "The image: REGISTRY/REPO[:TAG|@DIGEST] or oci:DIR[:TAG]")->required();
    a->key.add(c, "Private key (cosign.key, or a PKCS#8/SEC1 EC PEM)");
    c->add_option("--identity", a->identity,
                  "The docker-reference to sign (default: the registry reference, or for a layout the image's "
                  "title and tag)");
    c->add_flag("--json", a->json, "Print the result as JSON");
    a->flags.add(c, false, false);
    actions.emplace_back(c, [a] { return run_sign(*a); });
  }
  {
    auto a = std::make_shared<AttestArgs>();
    CLI::App* c = app.add_subcommand("attest", "Attach a signed in-toto attestation (DSSE) to an image");
    c->add_option("image", a->ref, "The image: REGISTRY/REPO[:TAG|@DIGEST] or oci:DIR[:TAG]")->required();
    a->key.add(c, "Private key (cosign.key, or a PKCS#8/SEC1 EC PEM)");
    c->add_option("--type", a->type, "slsa, spdx, cyclonedx or a predicate URI")->required();
    c->add_option("--predicate", a->predicate, "The predicate document (JSON)")->required();
    c->add_option("--identity", a->identity, "The subject name (default: the repository, or the image's title)");
    c->add_flag("--json", a->json, "Print the result as JSON");
    a->flags.add(c, false, false);
    actions.emplace_back(c, [a] { return run_attest(*a); });
  }
  {
    auto a = std::make_shared<VerifyArgs>();
    CLI::App* c = app.add_subcommand("verify", "Verify an image's signature and attestations with a public key");
    c->add_option("image", a->ref, "The image: REGISTRY/REPO[:TAG|@DIGEST] or oci:DIR[:TAG]")->required();
    c->add_option("--key", a->key, "Public key (cosign.pub)")->required();
    c->add_option("--identity", a->identity,
                  "The exact docker-reference the signature must carry (default: any tag of the reference's "
                  "repository)");
    c->add_option("--attestations", a->attestations,
                  "Attestations that must be present and valid: slsa, spdx, cyclonedx (comma-separated), or none "
                  "to skip the ones present")
        ->delimiter(',');
    c->add_flag("--json", a->json, "Print the verification report as JSON");
    a->flags.add(c, false, false);
    actions.emplace_back(c, [a] { return run_verify(*a); });
  }
  add_blob_commands(app, actions);
  {
    auto a = std::make_shared<SbomArgs>();
    CLI::App* c = app.add_subcommand("sbom", "Print an image's SBOM (dpkg and Python packages, data layers)");
    c->add_option("image", a->ref, "The image: REGISTRY/REPO[:TAG|@DIGEST], oci:DIR[:TAG] or docker-archive:FILE")
        ->required();
    c->add_option("--format", a->format, "spdx (SPDX 2.3 JSON) or cyclonedx (CycloneDX 1.5 JSON)")
        ->check(CLI::IsMember({"spdx", "cyclonedx"}));
    c->add_option("-o,--output", a->output, "Write the document to this file (default: stdout)");
    c->add_option("--sbom-base", a->sbom_base,
                  "scan: also list what the base layers hold (their file tree is read once and cached); skip: "
                  "only paddle-image's layers")
        ->check(CLI::IsMember({"scan", "skip"}));
    c->add_option("--cache-dir", a->cache_dir,
                  "Cache for the image's file tree (default: the layer cache, where a build keeps its base's)");
    c->add_flag("-q,--quiet", a->quiet, "Print only the document (and errors)");
    a->flags.add(c, false, true);
    actions.emplace_back(c, [a] { return run_sbom(*a); });
  }
}

} // namespace cli
