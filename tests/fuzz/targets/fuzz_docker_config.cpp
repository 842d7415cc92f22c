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
// learns to write the message's own words into the file.) A helper's name is no
// secret, and its error names it ("cannot run credential helper docker-credential-
// NAME"), so the names the config gives are taken out of a message before the check:
// the fuzzer also learns to put the canary in credsStore.
#include "registry/auth.hpp"
#include "tests/fuzz/support.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The message without "docker-credential-NAME" for each helper NAME the config names
// (credsStore, the values of credHelpers).
std::string without_helper_names(std::string msg, std::string_view config) {
  auto j = nlohmann::json::parse(config, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return msg;
  }
  std::vector<std::string> names;
  if (j.contains("credsStore") && j["credsStore"].is_string()) {
    names.push_back(j["credsStore"].get<std::string>());
  }
  if (j.contains("credHelpers") && j["credHelpers"].is_object()) {
    for (const auto& [host, helper] : j["credHelpers"].items()) {
      if (helper.is_string()) {
        names.push_back(helper.get<std::string>());
      }
    }
  }
  // Longer names first: a shorter one taken out first could cut a longer one that
  // starts with it ("" and "s3cr3t-canary" would leave the canary behind).
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& n : names) {
    const std::string prog = "docker-credential-" + n;
    for (auto at = msg.find(prog); at != std::string::npos; at = msg.find(prog)) {
      msg.erase(at, prog.size());
    }
  }
  return msg;
}

} // namespace

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
      std::string shown = without_helper_names(e.what(), fuzz::text(data, size));
      std::string_view msg(shown);
      if (msg.find("s3cr3t-canary") != std::string_view::npos ||
          msg.find("YWxpY2U6czNjcjN0LWNhbmFyeQ") != std::string_view::npos) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
