// libFuzzer target for the credential files: a docker config.json / containers
// auth.json ("auths" entries, base64 "auth", identity tokens, keys with schemes and
// paths), looked up for a few hosts as a registry command does. An error may name the
// file but never quote a secret.
#include "registry/auth.hpp"
#include "tests/fuzz/support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = fuzz::write_input(fuzz::text(data, size), "auth.json");
  registry::AuthFiles files;
  files.docker_config_dir = fuzz::scratch() / "no-docker-config";
  files.registry_auth_file = file;
  registry::CredentialStore store(files);
  for (const char* host : {"registry.example.com:5000", "docker.io", "127.0.0.1"}) {
    try {
      (void)store.lookup(host);
    } catch (const util::Error& e) {
      // The messages quote no part of the file (a field's value may be a secret).
      if (size >= 12 && std::string_view(e.what()).find(fuzz::text(data, size)) != std::string_view::npos) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
