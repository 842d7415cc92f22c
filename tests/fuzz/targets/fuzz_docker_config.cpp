// libFuzzer target for the credential files: a docker config.json (credHelpers,
// credsStore, "auths") and a containers auth.json ("auths" entries, base64 "auth",
// identity tokens, keys with schemes and paths), the input being both, looked up for a
// few hosts as a registry command does. A helper the config names is run as
// docker-credential-NAME from PATH: none is installed where the targets run, so each is
// "not found" (the unit suite replays this target in-process, so PATH stays as it is). An error may name the
// file but never quote a secret: the seeds and the dictionary carry the canary
// "s3cr3t-canary" (plain, and inside the base64 "auth" of alice:s3cr3t-canary), which
// no message may contain. (A check for "any part of the input" cannot work: the fuzzer
// learns to write the message's own words into the file.)
#include "registry/auth.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = fuzz::write_input(fuzz::text(data, size), "auth.json");
  fuzz::write_input(fuzz::text(data, size), "docker/config.json");
  registry::AuthFiles files;
  files.docker_config_dir = fuzz::scratch() / "docker";
  files.registry_auth_file = file;
  registry::CredentialStore store(files);
  for (const char* host : {"registry.example.com:5000", "docker.io", "127.0.0.1"}) {
    try {
      (void)store.lookup(host);
    } catch (const util::Error& e) {
      std::string_view msg(e.what());
      if (msg.find("s3cr3t-canary") != std::string_view::npos ||
          msg.find("YWxpY2U6czNjcjN0LWNhbmFyeQ") != std::string_view::npos) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
