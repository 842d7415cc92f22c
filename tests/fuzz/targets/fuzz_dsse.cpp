// libFuzzer target for what `verify` reads from a registry's .sig and .att tags: DSSE
// envelopes, the in-toto Statements inside them and simple-signing payloads. Each input
// is tried as an envelope (and its payload as a Statement) and as both payloads alone.
#include "signing/envelope.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string in(fuzz::text(data, size));
  static const auto image = oci::Digest::sha256(std::string(64, 'a'));
  const std::string type = "https://slsa.dev/provenance/v1";
  fuzz::refusal_ok([&] {
    auto e = signing::parse_envelope(in);
    if (e.signatures.empty()) {
      __builtin_trap(); // parse_envelope promises at least one
    }
    (void)signing::pae(e.payload_type, e.payload);
    (void)signing::parse_statement(e.payload, image, type);
  });
  fuzz::refusal_ok([&] { (void)signing::parse_statement(in, image, type); });
  fuzz::refusal_ok([&] { (void)signing::parse_simple_signing(in); });
  return 0;
}
