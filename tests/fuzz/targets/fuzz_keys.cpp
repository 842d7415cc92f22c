// libFuzzer target for cosign key files: PEM armour, PKIX public keys, and the private
// key forms (cosign's encrypted JSON, PKCS#8, SEC1). The passphrase source refuses, so
// an encrypted key is read up to the point where it would ask (no scrypt per input).
#include "signing/keys.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = fuzz::text(data, size);
  fuzz::refusal_ok([&] { (void)signing::read_pem(in, "key.pem"); });
  fuzz::refusal_ok([&] {
    auto k = signing::PublicKey::from_pem(in, "cosign.pub");
    (void)k.fingerprint();
    (void)k.verify("data", "not a signature");
  });
  fuzz::refusal_ok([&] {
    auto k = signing::PrivateKey::from_pem(in, "cosign.key", []() -> std::string {
      throw util::Error(util::ErrorKind::usage, "no passphrase in the fuzz target");
    });
    (void)k.public_key().fingerprint();
  });
  return 0;
}
