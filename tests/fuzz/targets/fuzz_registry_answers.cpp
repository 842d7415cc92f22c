// libFuzzer target for what a registry, its token server and a credential helper
// answer. The first byte picks: 0 a WWW-Authenticate header, 1 a token response, 2 an
// error body, 3 `docker-credential-* get` output.
#include "registry/auth.hpp"
#include "registry/error.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string in(fuzz::text(data + 1, size - 1));
  switch (data[0] % 4) {
  case 0:
    fuzz::refusal_ok([&] {
      for (const auto& c : registry::parse_challenges(in)) {
        if (c.scheme.empty()) {
          __builtin_trap(); // every challenge has a scheme
        }
      }
    });
    break;
  case 1:
    // Its contract: std::invalid_argument, worded by the session.
    fuzz::refusal_or_invalid_argument_ok([&] {
      auto t = registry::parse_token_response(in);
      if (t.token.empty() || !(t.lifetime_s >= 1 && t.lifetime_s <= 86400)) {
        __builtin_trap();
      }
    });
    break;
  case 2:
    fuzz::refusal_ok([&] { (void)registry::parse_error_body(in); });
    break;
  default:
    fuzz::refusal_ok([&] { (void)registry::parse_helper_output(in, "fuzz", "the fuzz config"); });
    break;
  }
  return 0;
}
