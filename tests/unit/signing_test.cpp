// Keys, payloads, envelopes and attachment manifests of the signing module, and
// sign/verify round trips on a real OCI layout.
#include "oci/attachment.hpp"
#include "oci/layout.hpp"
#include "oci/layout_image.hpp"
#include "signing/blob.hpp"
#include "signing/envelope.hpp"
#include "signing/keys.hpp"
#include "signing/provenance.hpp"
#include "signing/sign.hpp"
#include "tests/unit/support.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <doctest/doctest.h>

namespace unit_signing_test {

namespace {

const char* k_ed25519 = "-----BEGIN PRIVATE KEY-----\n"
                        "MC4CAQAwBQYDK2VwBCIEIG2a6kkfIMz0nFbL1e+6po3nK/0dYXK3vaQSfe4O+1PR\n"
                        "-----END PRIVATE KEY-----\n";
const char* k_rsa = "-----BEGIN PRIVATE KEY-----\n"
                    "MIIBVAIBADANBgkqhkiG9w0BAQEFAASCAT4wggE6AgEAAkEAre2eGRf/Wia7V4+D\n"
                    "WcBYW9IyYDu+Az0m/Z+mw7afm+RFtkueLYa5izmATdRgtAfp3ykqoeVm2RWtHnrc\n"
                    "sBe3XwIDAQABAkAjMiiCD3ce+SOEDoiYCvJWcmy7SJuk8CUJwdrvU+9sjimcyCHV\n"
                    "tL8Sc/PC9QNIB8/7nXz2sPxK4wj2WHXfzXgRAiEA1bQAcTp5fR/JI6fRa7hagojO\n"
                    "ttgAAaiuhBPSyQjQWFsCIQDQWkhsMKgSZIIxqW696Ph+PfbWE9QegMGUaxtaBzCs\n"
                    "TQIgMFkP/I35LGjDjdCK3a8QsxWWhuFpZvatvO3rM1ZOJJ8CICT0XnQSDT115kG4\n"
                    "s5OrhqedhfJigfUHEU6p0KgfLlrhAiEApyGDKqgiZnJHEcQbljPTAntJBX2O/aA+\n"
                    "U161qC/weHY=\n"
                    "-----END PRIVATE KEY-----\n";
const char* k_p384 = "-----BEGIN PRIVATE KEY-----\n"
                     "MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAZfo6KfXvhMOPPiqN6\n"
                     "1khorYs+uDDJYPG/z+hnw8J/B4fWQB+dlfJsWho/O/m/WNKhZANiAASAR5sTVmW0\n"
                     "5msIQq48x4cj0WFJjvwKifCH9Rx8g9yJuv+F91d37vrPciV89y1xbvx/UMccBYC7\n"
                     "KcXOemZpfhbTH+V/5Ao78w25W+2d0B2hWkJxx/XVDVjDc6Ne+6gbjLc=\n"
                     "-----END PRIVATE KEY-----\n";
const char* k_sec1 = "-----BEGIN EC PRIVATE KEY-----\n"
                     "MHcCAQEEILkohALtgPEpwr8FP/Lya8F2+NpakLTDaBzLOnmoWH59oAoGCCqGSM49\n"
                     "AwEHoUQDQgAET0BD9oGlnsgvxzmSx25j+1Wjcmq0MXWPLEBC+DZRhGoc2SwkBZGw\n"
                     "t7KK4tNowkp2kwDfxRYMkxQvvZHvFhhqyQ==\n"
                     "-----END EC PRIVATE KEY-----\n";

signing::PassphraseSource pass(const std::string& p) {
  return [p] { return p; };
}

std::string error_of(const std::function<void()>& f, util::ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const util::Error& e) {
    if (kind != nullptr) {
      *kind = e.kind();
    }
    return e.what();
  }
  return "";
}

oci::Digest digest_of(const std::string& s) {
  return oci::Digest::sha256(util::sha256_hex(s));
}

// A layout holding one small image under tag v1; returns its manifest digest.
oci::Digest make_layout(const std::filesystem::path& dir) {
  auto layout = oci::OciLayout::open_or_create(dir);
  oci::ImageConfig cfg;
  cfg.config.labels["org.opencontainers.image.title"] = "registry.example.com/team/ocr";
  oci::Descriptor c = layout.blobs().put_bytes(oci::media::k_config, oci::canonical(oci::to_json(cfg)));
  oci::Manifest m;
  m.config = c;
  oci::Descriptor md = layout.blobs().put_bytes(oci::media::k_manifest, oci::canonical(oci::to_json(m)));
  layout.add_manifest(md, {"v1"});
  return md.digest;
}

} // namespace

TEST_CASE("signing: PAE and the simple-signing payload are byte-exact") {
  CHECK(signing::pae("application/vnd.in-toto+json", "hello") == "DSSEv1 28 application/vnd.in-toto+json 5 hello");
  CHECK(signing::pae("", "") == "DSSEv1 0  0 ");
  oci::Digest d = oci::Digest::parse("sha256:" + std::string(64, 'a'));
  CHECK(signing::simple_signing_payload("reg.example/team/ocr:1.4", d) ==
        "{\"critical\":{\"identity\":{\"docker-reference\":\"reg.example/team/ocr:1.4\"},\"image\":{\"docker-manifest-"
        "digest\":\"sha256:" +
            std::string(64, 'a') + "\"},\"type\":\"cosign container image signature\"},\"optional\":null}");
  auto s = signing::parse_simple_signing(signing::simple_signing_payload("r/x:1", d));
  CHECK(s.docker_reference == "r/x:1");
  CHECK(s.manifest == d);
}

TEST_CASE("signing: simple-signing payloads are parsed as strictly as containers/image does") {
  util::ErrorKind kind{};
  std::string base = signing::simple_signing_payload("r/x:1", oci::Digest::parse("sha256:" + std::string(64, 'b')));
  auto j = nlohmann::json::parse(base);
  j["extra"] = 1;
  CHECK(error_of([&] { signing::parse_simple_signing(j.dump()); }, &kind).find("not exactly") != std::string::npos);
  CHECK(kind == util::ErrorKind::verification);
  j = nlohmann::json::parse(base);
  j["critical"]["type"] = "something else";
  CHECK(error_of([&] { signing::parse_simple_signing(j.dump()); }).find("critical.type") != std::string::npos);
  j = nlohmann::json::parse(base);
  j["critical"]["image"]["docker-manifest-digest"] = "nope";
  CHECK(error_of([&] { signing::parse_simple_signing(j.dump()); }).find("not a digest") != std::string::npos);
  j = nlohmann::json::parse(base);
  j["optional"] = {{"timestamp", 1}};
  CHECK_NOTHROW(signing::parse_simple_signing(j.dump()));
  CHECK(error_of([&] { signing::parse_simple_signing(base.substr(0, 30)); }).find("not JSON") != std::string::npos);
}

TEST_CASE("signing: an attestation's payload must be an in-toto Statement about the image") {
  auto img = oci::Digest::sha256(std::string(64, 'a'));
  const std::string type = "https://slsa.dev/provenance/v1";
  auto good = signing::statement("app", img, type, {{"x", 1}});
  CHECK(signing::parse_statement(good.dump(), img, type) == nlohmann::json{{"x", 1}});
  auto refused = [&](nlohmann::json st, const std::string& why) {
    CAPTURE(why);
    util::ErrorKind kind{};
    auto msg = error_of([&] { (void)signing::parse_statement(st.dump(), img, type); }, &kind);
    CHECK(kind == util::ErrorKind::verification);
    CHECK(msg.find(why) != std::string::npos);
  };
  CHECK(error_of([&] { (void)signing::parse_statement("not json", img, type); }).find("not an in-toto") !=
        std::string::npos);
  auto st = good;
  st["_type"] = 1; // wrong JSON types are refusals, never a stray exception
  refused(st, "not an in-toto Statement v1");
  st = good;
  st["subject"][0]["digest"]["sha256"] = 7;
  refused(st, "subject is not sha256:");
  st = good;
  st["subject"][0]["digest"]["sha256"] = std::string(64, 'b');
  refused(st, "subject is not sha256:");
  st = good;
  st["predicateType"] = nlohmann::json::array();
  refused(st, "predicateType [] differs");
  st = good;
  st["predicateType"] = "https://spdx.dev/Document";
  refused(st, "differs from the layer's annotation");
  st = good;
  st["predicate"] = "x";
  refused(st, "no predicate object");
}

TEST_CASE("signing: cosign keys round-trip, and bad keys get their own messages") {
  signing::PrivateKey k = signing::PrivateKey::generate();
  std::string pem = k.to_cosign_pem("s3cret");
  CHECK(pem.rfind("-----BEGIN ENCRYPTED COSIGN PRIVATE KEY-----\n", 0) == 0);
  CHECK(pem.find("s3cret") == std::string::npos);
  signing::PemBlock b = signing::read_pem(pem, "k");
  auto body = nlohmann::json::parse(b.der);
  CHECK(body["kdf"]["params"]["N"] == 32768);
  CHECK(body["kdf"]["params"]["r"] == 8);
  CHECK(body["cipher"]["name"] == "nacl/secretbox");

  signing::PrivateKey again = signing::PrivateKey::from_pem(pem, "cosign.key", pass("s3cret"));
  CHECK(again.public_key().pem() == k.public_key().pem());
  std::string sig = again.sign("payload");
  CHECK(k.public_key().verify("payload", sig));
  CHECK_FALSE(k.public_key().verify("payloaD", sig));
  signing::PublicKey pub = signing::PublicKey::from_pem(k.public_key().pem(), "cosign.pub");
  CHECK(pub.fingerprint() == k.public_key().fingerprint());

  util::ErrorKind kind{};
  CHECK(error_of([&] { signing::PrivateKey::from_pem(pem, "cosign.key", pass("wrong")); }, &kind)
            .find("wrong passphrase or damaged key") != std::string::npos);
  CHECK(kind == util::ErrorKind::input);
  // A flipped byte in the ciphertext fails authentication the same way.
  std::string ct;
  REQUIRE(util::base64_decode(body["ciphertext"].get<std::string>(), ct));
  ct[5] = static_cast<char>(ct[5] ^ 1);
  body["ciphertext"] = util::base64_encode(ct);
  std::string tampered = signing::write_pem("ENCRYPTED COSIGN PRIVATE KEY", body.dump());
  CHECK(error_of([&] {
          signing::PrivateKey::from_pem(tampered, "t.key", pass("s3cret"));
        }).find("wrong passphrase or damaged key") != std::string::npos);
  // Truncated: no END line.
  CHECK(error_of([&] {
          signing::PrivateKey::from_pem(pem.substr(0, pem.size() / 2), "t.key", pass("s3cret"));
        }).find("truncated") != std::string::npos);
  // scrypt parameters outside what cosign writes.
  body = nlohmann::json::parse(b.der);
  body["kdf"]["params"]["N"] = 1 << 20;
  CHECK(error_of([&] {
          signing::PrivateKey::from_pem(signing::write_pem("ENCRYPTED SIGSTORE PRIVATE KEY", body.dump()), "t.key",
                                        pass("s3cret"));
        }).find("unsupported scrypt parameters") != std::string::npos);
  // Never a passphrase prompt for an unencrypted key.
  auto no_prompt = []() -> std::string { throw util::Error(util::ErrorKind::usage, "asked"); };
  CHECK_NOTHROW(signing::PrivateKey::from_pem(k_sec1, "sec1.pem", no_prompt));
}

TEST_CASE("signing: RSA, Ed25519 and other curves are refused with what they are") {
  util::ErrorKind kind{};
  CHECK(error_of([&] { signing::PrivateKey::from_pem(k_rsa, "rsa.pem", pass("")); }, &kind).find("an RSA key") !=
        std::string::npos);
  CHECK(kind == util::ErrorKind::input);
  CHECK(error_of([&] { signing::PrivateKey::from_pem(k_ed25519, "ed.pem", pass("")); }).find("Ed25519") !=
        std::string::npos);
  CHECK(error_of([&] { signing::PrivateKey::from_pem(k_p384, "p384.pem", pass("")); }).find("secp384r1") !=
        std::string::npos);
  CHECK(error_of([&] { signing::PublicKey::from_pem(k_sec1, "x.pub"); }).find("verify with the public key") ==
        std::string::npos);
  CHECK(error_of([&] { signing::PublicKey::from_pem(k_sec1, "x.pub"); }).find("not a 'PUBLIC KEY'") !=
        std::string::npos);
  CHECK(error_of([&] { signing::PrivateKey::from_pem("hello", "x.key", pass("")); }).find("not a PEM") !=
        std::string::npos);
}

TEST_CASE("signing: DSSE envelopes round-trip and refuse damage") {
  signing::Envelope e{"application/vnd.in-toto+json", "{\"a\":1}", {{"", "\x30\x01\x02"}}};
  signing::Envelope back = signing::parse_envelope(signing::envelope_json(e));
  CHECK(back.payload == e.payload);
  CHECK(back.payload_type == e.payload_type);
  REQUIRE(back.signatures.size() == 1);
  CHECK(back.signatures[0].sig == e.signatures[0].sig);
  std::string json = signing::envelope_json(e);
  CHECK(error_of([&] { signing::parse_envelope(json.substr(0, json.size() - 5)); }).find("truncated") !=
        std::string::npos);
  auto j = nlohmann::json::parse(json);
  j["signatures"] = nlohmann::json::array();
  CHECK(error_of([&] { signing::parse_envelope(j.dump()); }).find("no signatures") != std::string::npos);
}

TEST_CASE("signing: attachment manifests are cosign's shape and merge as a union") {
  oci::Descriptor a{signing::k_simple_signing_media_type, digest_of("a"), 1, {{"k", "1"}}, {}, {}};
  oci::Descriptor b{signing::k_simple_signing_media_type, digest_of("b"), 1, {{"k", "2"}}, {}, {}};
  oci::ArtifactManifest m = oci::attachment_manifest({a, b});
  auto cfg = nlohmann::json::parse(m.config_bytes);
  CHECK(cfg["rootfs"]["diff_ids"] == nlohmann::json::array({a.digest.str(), b.digest.str()}));
  CHECK(cfg["architecture"] == "");
  auto man = nlohmann::json::parse(m.manifest.bytes);
  CHECK(man["mediaType"] == oci::media::k_manifest);
  CHECK(man["layers"].size() == 2);
  CHECK(oci::union_layers({a}, {b, a}).size() == 2);
  CHECK(oci::union_layers({a, b}, {a}).size() == 2);
  CHECK(oci::is_mergeable_attachment_tag("sha256-" + std::string(64, 'c') + ".sig"));
  CHECK_FALSE(oci::is_mergeable_attachment_tag("sha256-" + std::string(64, 'c')));
}

TEST_CASE("signing: sign, attest and verify in an OCI layout; idempotent per key, appended per key") {
  auto tmp = test_support::make_temp("signing-layout");
  auto dir = tmp.path() / "layout";
  oci::Digest img = make_layout(dir);
  signing::PrivateKey k1 = signing::PrivateKey::generate();
  signing::PrivateKey k2 = signing::PrivateKey::generate();
  {
    auto layout = oci::OciLayout::open_existing(dir);
    oci::LayoutAttachments store(layout);
    auto s1 = signing::sign_image(store, img, "registry.example.com/team/ocr:v1", k1, "test");
    CHECK(s1.added);
    auto again = signing::sign_image(store, img, "registry.example.com/team/ocr:v1", k1, "test");
    CHECK_FALSE(again.added);
    CHECK(again.attachment == s1.attachment);
    auto s2 = signing::sign_image(store, img, "registry.example.com/team/ocr:v1", k2, "test");
    CHECK(s2.added);
    auto layers = oci::attachment_layers(*store.tagged(s1.tag), "t");
    CHECK(layers.size() == 2);
    auto at = signing::attest_image(store, img, "registry.example.com/team/ocr", signing::k_slsa_provenance,
                                    {{"buildDefinition", {{"buildType", "x"}}}}, k1, "test");
    CHECK(at.added);
    CHECK_FALSE(signing::attest_image(store, img, "registry.example.com/team/ocr", signing::k_slsa_provenance,
                                      {{"buildDefinition", {{"buildType", "x"}}}}, k1, "test")
                    .added);
  }
  auto image = oci::open_layout_image(dir, "v1", "oci:test:v1");
  signing::VerifyOptions opt;
  opt.identity = "registry.example.com/team/ocr";
  opt.attestations = {signing::k_slsa_provenance};
  auto rep = signing::verify_image(*image, img, k1.public_key(), opt);
  CHECK_MESSAGE(rep.ok, rep.failure);
  CHECK(rep.signatures.size() == 2);
  CHECK(signing::verify_image(*image, img, k2.public_key(), {opt.identity, {}, false}).ok);
  // Another key, another repository, a missing attestation: each fails and says why.
  auto other = signing::verify_image(*image, img, signing::PrivateKey::generate().public_key(), opt);
  CHECK_FALSE(other.ok);
  CHECK(other.failure.find("does not verify with this key") != std::string::npos);
  auto repo = signing::verify_image(*image, img, k1.public_key(), {"registry.example.com/team/other", {}, true});
  CHECK_FALSE(repo.ok);
  CHECK(repo.failure.find("docker-reference") != std::string::npos);
  auto missing = signing::verify_image(*image, img, k1.public_key(), {opt.identity, {signing::k_spdx_document}, true});
  CHECK_FALSE(missing.ok);
  CHECK(missing.failure.find("no https://spdx.dev/Document attestation") != std::string::npos);
  // The exact identity must match exactly; the repository matches any tag.
  CHECK(signing::verify_image(*image, img, k1.public_key(), {"registry.example.com/team/ocr:v1", {}, true}).ok);
  CHECK_FALSE(signing::verify_image(*image, img, k1.public_key(), {"registry.example.com/team/ocr:v2", {}, true}).ok);
}

TEST_CASE("signing: documents derive their ids from the image digest") {
  CHECK(signing::uuid_v5("spdx:sha256:00") == "02cc58bf-3d38-5d66-aea7-3417e9be8e72");
  signing::SbomInput in;
  in.image_name = "registry.example.com/team/ocr";
  in.image = oci::Digest::parse("sha256:" + std::string(64, 'd'));
  in.created = "2024-01-01T00:00:00Z";
  in.tool_version = "0.1.0";
  in.components.push_back({"deb", "libc6", "2.36-9", "pkg:deb/debian/libc6@2.36-9?arch=amd64", "var/lib/dpkg/status",
                           "sha256:" + std::string(64, 'e'), "", "", ""});
  auto spdx = signing::spdx_document(in);
  CHECK(spdx["spdxVersion"] == "SPDX-2.3");
  CHECK(spdx == signing::spdx_document(in));
  CHECK(spdx["documentNamespace"].get<std::string>().find(signing::uuid_v5("spdx:" + in.image.str())) !=
        std::string::npos);
  CHECK(spdx["packages"][1]["externalRefs"][0]["referenceLocator"] == "pkg:deb/debian/libc6@2.36-9?arch=amd64");
  auto cdx = signing::cyclonedx_bom(in);
  CHECK(cdx["serialNumber"] == "urn:uuid:" + signing::uuid_v5("cyclonedx:" + in.image.str()));
  CHECK(cdx["components"][0]["purl"] == "pkg:deb/debian/libc6@2.36-9?arch=amd64");
}

namespace {

// Adds an attestation layer holding `e` under predicate type `type` to the image's
// .att attachment, as a tampering registry or a second signer would.
void add_envelope(oci::AttachmentStore& store, const oci::Digest& img, const signing::Envelope& e,
                  const std::string& type) {
  std::string bytes = signing::envelope_json(e);
  oci::Descriptor layer;
  layer.media_type = signing::k_dsse_media_type;
  layer.digest = digest_of(bytes);
  layer.size = static_cast<std::int64_t>(bytes.size());
  layer.annotations[signing::k_predicate_type_annotation] = type;
  layer.annotations[signing::k_signature_annotation] = "";
  oci::add_attachment_layers(store, img.algorithm + "-" + img.hex + ".att", {{layer, bytes}}, "test");
}

// A fresh layout (make_layout) whose attachments `setup` writes, verified with `key`.
signing::VerifyReport verify_prepared(const std::filesystem::path& dir,
                                      const std::function<void(oci::AttachmentStore&, const oci::Digest&)>& setup,
                                      const signing::PrivateKey& key, const signing::VerifyOptions& opt) {
  oci::Digest img = make_layout(dir);
  {
    auto layout = oci::OciLayout::open_existing(dir);
    oci::LayoutAttachments store(layout);
    setup(store, img);
  }
  auto image = oci::open_layout_image(dir, "v1", "oci:test:v1");
  return signing::verify_image(*image, img, key.public_key(), opt);
}

signing::Envelope signed_envelope(const signing::PrivateKey& key, const std::string& payload_type,
                                  const std::string& body) {
  signing::Envelope e;
  e.payload_type = payload_type;
  e.payload = body;
  e.signatures.push_back({"", key.sign(signing::pae(payload_type, body))});
  return e;
}

} // namespace

TEST_CASE("signing: verify is as strict as docs/signing.md says (tampered, foreign and missing attestations)") {
  auto tmp = test_support::make_temp("signing-adversarial");
  signing::PrivateKey mine = signing::PrivateKey::generate();
  signing::PrivateKey theirs = signing::PrivateKey::generate();
  const std::string id = "registry.example.com/team/ocr";
  const nlohmann::json predicate = {{"buildDefinition", {{"buildType", "x"}}}};
  int n = 0;
  // A fresh layout signed by `mine`, then `setup` adds attestations; the verdict with
  // the default options (every predicate type the image carries must pass).
  auto verdict = [&](const std::function<void(oci::AttachmentStore&, const oci::Digest&)>& setup,
                     signing::VerifyOptions opt = {}) {
    opt.identity = id;
    return verify_prepared(
        tmp.path() / ("l" + std::to_string(n++)),
        [&](oci::AttachmentStore& store, const oci::Digest& img) {
          signing::sign_image(store, img, id + ":v1", mine, "test");
          setup(store, img);
        },
        mine, opt);
  };
  auto statement_for = [&](const oci::Digest& subject, const nlohmann::json& pred) {
    return signing::statement(id, subject, signing::k_slsa_provenance, pred).dump();
  };

  SUBCASE("an honest attestation passes") {
    auto r = verdict([&](auto& store, const auto& img) {
      signing::attest_image(store, img, id, signing::k_slsa_provenance, predicate, mine, "test");
    });
    CHECK_MESSAGE(r.ok, r.failure);
  }
  SUBCASE("an edited predicate under the old signature fails (exit 11), not skipped as another key's") {
    auto r = verdict([&](auto& store, const auto& img) {
      auto e = signed_envelope(mine, signing::k_in_toto_payload_type, statement_for(img, predicate));
      e.payload = statement_for(img, {{"buildDefinition", {{"buildType", "edited"}}}});
      add_envelope(store, img, e, signing::k_slsa_provenance);
    });
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("attestation of") != std::string::npos);
    CHECK(r.failure.find("no envelope signature verifies with this key") != std::string::npos);
  }
  SUBCASE("an edited payload type fails") {
    auto r = verdict([&](auto& store, const auto& img) {
      auto e = signed_envelope(mine, signing::k_in_toto_payload_type, statement_for(img, predicate));
      e.payload_type = "application/json";
      add_envelope(store, img, e, signing::k_slsa_provenance);
    });
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("payloadType") != std::string::npos);
  }
  SUBCASE("a foreign envelope beside a tampered one does not make the type pass") {
    auto r = verdict([&](auto& store, const auto& img) {
      add_envelope(store, img, signed_envelope(theirs, signing::k_in_toto_payload_type, statement_for(img, predicate)),
                   signing::k_slsa_provenance);
      auto bad = signed_envelope(mine, signing::k_in_toto_payload_type, statement_for(img, predicate));
      bad.payload += " ";
      add_envelope(store, img, bad, signing::k_slsa_provenance);
    });
    CHECK_FALSE(r.ok);
    CHECK(r.attestations.size() == 2);
  }
  SUBCASE("an attestation signed by this key for another digest fails") {
    auto r = verdict([&](auto& store, const auto& img) {
      add_envelope(store, img,
                   signed_envelope(mine, signing::k_in_toto_payload_type, statement_for(digest_of("other"), predicate)),
                   signing::k_slsa_provenance);
    });
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("subject is not") != std::string::npos);
  }
  SUBCASE("a key that attested nothing fails, and passes with --attestations none") {
    auto setup = [&](oci::AttachmentStore& store, const oci::Digest& img) {
      signing::attest_image(store, img, id, signing::k_slsa_provenance, predicate, theirs, "test");
    };
    auto r = verdict(setup);
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("--attestations none") != std::string::npos);
    signing::VerifyOptions none;
    none.check_present = false;
    auto ok = verdict(setup, none);
    CHECK_MESSAGE(ok.ok, ok.failure);
  }
  SUBCASE("this key's attestation beside another key's passes") {
    auto r = verdict([&](auto& store, const auto& img) {
      signing::attest_image(store, img, id, signing::k_slsa_provenance, predicate, theirs, "test");
      signing::attest_image(store, img, id, signing::k_slsa_provenance, predicate, mine, "test");
    });
    CHECK_MESSAGE(r.ok, r.failure);
  }
  SUBCASE("a predicate type --attestations names and the image lacks fails") {
    signing::VerifyOptions want;
    want.attestations = {signing::k_cyclonedx_bom};
    auto r = verdict(
        [&](auto& store, const auto& img) {
          signing::attest_image(store, img, id, signing::k_slsa_provenance, predicate, mine, "test");
        },
        want);
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("no https://cyclonedx.org/bom attestation") != std::string::npos);
  }
}

TEST_CASE("signing: a failed verify blames the layer this key signed, not another key's") {
  auto tmp = test_support::make_temp("signing-blame");
  signing::PrivateKey mine = signing::PrivateKey::generate();
  signing::PrivateKey theirs = signing::PrivateKey::generate();
  auto r = verify_prepared(tmp.path() / "layout",
                           [&](oci::AttachmentStore& store, const oci::Digest& img) {
                             // Another key's signature first, then this key's for another repository.
                             signing::sign_image(store, img, "registry.example.com/team/ocr:v1", theirs, "test");
                             signing::sign_image(store, img, "registry.example.com/team/other:v1", mine, "test");
                           },
                           mine, {"registry.example.com/team/ocr", {}, true});
  CHECK_FALSE(r.ok);
  REQUIRE(r.signatures.size() == 2);
  CHECK(r.failure.find(r.signatures[1].layer.str()) != std::string::npos);
  CHECK(r.failure.find("docker-reference is 'registry.example.com/team/other:v1'") != std::string::npos);
}

TEST_CASE("signing: file attestations (attest-blob) verify for each subject, and refuse damage") {
  auto key = signing::PrivateKey::generate();
  auto other = signing::PrivateKey::generate();
  const std::string a = util::sha256_hex("archive bytes");
  const std::string d = util::sha256_hex("deb bytes");
  nlohmann::json predicate = {{"buildDefinition", {{"buildType", "https://example.com/t"}}}, {"runDetails", {}}};
  std::string line = signing::attest_files({{"x.tar.gz", a}, {"x.deb", d}}, signing::k_slsa_provenance, predicate, key);
  CHECK(line.find('\n') == std::string::npos);
  auto envs = signing::read_attestations(line + "\n", "p.intoto.jsonl");
  REQUIRE(envs.size() == 1);
  CHECK(envs[0].payload_type == signing::k_in_toto_payload_type);
  auto st = nlohmann::json::parse(envs[0].payload);
  CHECK(st["_type"] == signing::k_statement_type);
  CHECK(st["subject"][1] == nlohmann::json{{"name", "x.deb"}, {"digest", {{"sha256", d}}}});
  auto verify = [&](const std::vector<signing::Envelope>& e, const std::string& sha, const signing::PublicKey& k,
                    const std::string& type = signing::k_slsa_provenance) {
    return signing::verify_file_attestation(e, sha, k, type, "FILE", "p.intoto.jsonl", "k.pub");
  };

  SUBCASE("each subject verifies; the statement's predicate comes back") {
    auto r = verify(envs, d, key.public_key());
    CHECK(r.ok);
    CHECK(r.subject == "x.deb");
    CHECK(r.predicate == predicate);
    CHECK(r.predicate_type == signing::k_slsa_provenance);
    CHECK(verify(envs, a, key.public_key(), "").ok); // any type
  }
  SUBCASE("a file that is not among the subjects") {
    auto r = verify(envs, util::sha256_hex("tampered"), key.public_key());
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("FILE (sha256:") != std::string::npos);
    CHECK(r.failure.find("is not a subject of p.intoto.jsonl (its subjects: x.tar.gz, x.deb)") != std::string::npos);
  }
  SUBCASE("another key") {
    auto r = verify(envs, a, other.public_key());
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("no signature in p.intoto.jsonl verifies with k.pub") != std::string::npos);
  }
  SUBCASE("a tampered payload (another subject digest, same signature)") {
    auto j = nlohmann::json::parse(line);
    std::string body = envs[0].payload;
    body.replace(body.find(a), a.size(), util::sha256_hex("evil"));
    j["payload"] = util::base64_encode(body);
    auto tampered = signing::read_attestations(j.dump(), "p.intoto.jsonl");
    auto r = verify(tampered, util::sha256_hex("evil"), key.public_key());
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("another key signed it, or its payload was altered") != std::string::npos);
  }
  SUBCASE("another predicate type") {
    auto r = verify(envs, a, key.public_key(), signing::k_spdx_document);
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("attests https://slsa.dev/provenance/v1, not https://spdx.dev/Document") != std::string::npos);
  }
  SUBCASE("JSON Lines: the envelope that verifies wins; the failure is the one that got furthest") {
    std::string foreign = signing::attest_files({{"x.tar.gz", a}}, signing::k_slsa_provenance, predicate, other);
    std::string sbom =
        signing::attest_files({{"x.tar.gz", a}}, signing::k_spdx_document, {{"spdxVersion", "SPDX-2.3"}}, key);
    auto three = signing::read_attestations(foreign + "\n\n" + sbom + "\n" + line + "\n", "m.intoto.jsonl");
    REQUIRE(three.size() == 3);
    auto r = signing::verify_file_attestation(three, d, key.public_key(), signing::k_slsa_provenance, "FILE",
                                              "m.intoto.jsonl", "k.pub");
    CHECK(r.ok);
    CHECK(r.envelope == 2);
    auto spdx = signing::verify_file_attestation(three, a, key.public_key(), signing::k_spdx_document, "FILE",
                                                 "m.intoto.jsonl", "k.pub");
    CHECK(spdx.ok);
    CHECK(spdx.envelope == 1);
    auto none = signing::verify_file_attestation(three, util::sha256_hex("x"), key.public_key(),
                                                 signing::k_slsa_provenance, "FILE", "m.intoto.jsonl", "k.pub");
    CHECK_FALSE(none.ok);
    CHECK(none.failure.find("is not a subject of m.intoto.jsonl (envelope 3)") != std::string::npos);
  }
  SUBCASE("a pretty-printed envelope and cosign's bundles hold one envelope") {
    CHECK(signing::read_attestations(nlohmann::json::parse(line).dump(2), "e.json").size() == 1);
    nlohmann::json old_bundle = {{"base64Signature", util::base64_encode(line)}, {"cert", ""}};
    CHECK(verify(signing::read_attestations(old_bundle.dump(), "b.json"), a, key.public_key()).ok);
    nlohmann::json new_bundle = {{"mediaType", "application/vnd.dev.sigstore.bundle.v0.3+json"},
                                 {"dsseEnvelope", nlohmann::json::parse(line)}};
    CHECK(verify(signing::read_attestations(new_bundle.dump(), "b.json"), a, key.public_key()).ok);
  }
  SUBCASE("what is no attestation file is refused, naming the file and the line") {
    CHECK(error_of([&] { signing::read_attestations("", "p.intoto.jsonl"); }).find("p.intoto.jsonl is empty") !=
          std::string::npos);
    CHECK(error_of([&] {
            signing::read_attestations(line + "\nnot json\n", "p.intoto.jsonl");
          }).find("p.intoto.jsonl line 2") != std::string::npos);
    CHECK(error_of([&] {
            signing::read_attestations("{\"payload\": 1}", "p.intoto.jsonl");
          }).find("p.intoto.jsonl: DSSE envelope") != std::string::npos);
    signing::Envelope e{"text/plain", "hi", {{"", key.sign(signing::pae("text/plain", "hi"))}}};
    auto r = verify({e}, a, key.public_key());
    CHECK_FALSE(r.ok);
    CHECK(r.failure.find("payloadType 'text/plain'") != std::string::npos);
  }
}

TEST_CASE("signing: predicate types by cosign's names or by URI") {
  CHECK(signing::predicate_uri("slsaprovenance1") == signing::k_slsa_provenance);
  CHECK(signing::predicate_uri("spdxjson") == signing::k_spdx_document);
  CHECK(signing::predicate_uri("https://example.com/attestation/v1") == "https://example.com/attestation/v1");
  util::ErrorKind kind{};
  CHECK(error_of([] { signing::predicate_uri("bogus"); }, &kind).find("unknown attestation type 'bogus'") !=
        std::string::npos);
  CHECK(kind == util::ErrorKind::usage);
  CHECK_FALSE(error_of([] { signing::predicate_uri("https://x y"); }).empty());
}

TEST_CASE("signing: spdx_components reads the packages an SPDX document lists with a purl") {
  nlohmann::json ref = {{"referenceCategory", "PACKAGE-MANAGER"},
                        {"referenceType", "purl"},
                        {"referenceLocator", "pkg:github/paddle-image/paddle-image@1.0"}};
  nlohmann::json doc = {{"spdxVersion", "SPDX-2.3"},
                        {"packages",
                         {{{"name", "paddle-image"},
                           {"versionInfo", "1.0"},
                           {"licenseDeclared", "LicenseRef-terms"},
                           {"checksums", {{{"algorithm", "SHA256"}, {"checksumValue", "not-hex"}}}},
                           {"externalRefs", {ref}}},
                          {{"name", "no purl"}},
                          "not an object"}}};
  auto c = signing::spdx_components(doc, "var/lib/db/sbom/x.spdx.json");
  REQUIRE(c.size() == 1);
  CHECK(c[0].kind == "github");
  CHECK(c[0].name == "paddle-image");
  CHECK(c[0].version == "1.0");
  CHECK(c[0].license.empty()); // a LicenseRef's text is in that document only
  CHECK(c[0].sha256.empty());  // not a SHA-256
  CHECK(c[0].location == "var/lib/db/sbom/x.spdx.json");
  CHECK(signing::spdx_components(nlohmann::json::array(), "x").empty());
  CHECK(signing::spdx_components({{"spdxVersion", "SPDX-3.0"}, {"packages", doc["packages"]}}, "x").empty());
}

} // namespace unit_signing_test
