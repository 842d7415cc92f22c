// libFuzzer target for the credential files: a docker config.json (credHelpers,
// credsStore, "auths") and a containers auth.json ("auths" entries, base64 "auth",
// identity tokens, keys with schemes and paths), the input being both, looked up for a
// few hosts as a registry command does. A helper the config names is run as
// docker-credential-NAME from PATH, which is an empty directory while the input is
// looked up, so each is "not found": a machine can have a real helper installed
// (docker-credential-gcloud takes seconds and may call the network), and the run must
// not depend on it (PATH is put back afterwards: the unit suite replays this target
// in-process). An error may name the
// file but never quote a secret: the seeds and the dictionary carry the canary
// "s3cr3t-canary" (plain, and inside the base64 "auth" of alice:s3cr3t-canary), which
// no message may contain. (A check for "any part of the input" cannot work: the fuzzer
// learns to write the message's own words into the file.)
#include "registry/auth.hpp"
#include "tests/fuzz/support.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto file = fuzz::write_input(fuzz::text(data, size), "auth.json");
  fuzz::write_input(fuzz::text(data, size), "docker/config.json");
  registry::AuthFiles files;
  files.docker_config_dir = fuzz::scratch() / "docker";
  files.registry_auth_file = file;
  registry::CredentialStore store(files);
  static const std::filesystem::path& no_helpers = *[] {
    auto* d = new std::filesystem::path(fuzz::scratch() / "empty-path");
    std::filesystem::create_directories(*d);
    return d;
  }();
  struct PathSwap {
    std::string saved;
    bool had = false;
    explicit PathSwap(const std::filesystem::path& dir) {
      if (const char* p = std::getenv("PATH")) {
        saved = p;
        had = true;
      }
      ::setenv("PATH", dir.c_str(), 1);
    }
    ~PathSwap() {
      if (had) {
        ::setenv("PATH", saved.c_str(), 1);
      } else {
        ::unsetenv("PATH");
      }
    }
    PathSwap(const PathSwap&) = delete;
    PathSwap& operator=(const PathSwap&) = delete;
  } path_swap(no_helpers);
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
