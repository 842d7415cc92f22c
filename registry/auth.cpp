#include "registry/auth.hpp"

#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace registry {

using util::Error;
using util::ErrorKind;

namespace {

std::optional<nlohmann::json> read_json_file(const fs::path& p) {
  std::error_code ec;
  if (p.empty() || !fs::exists(p, ec)) {
    return std::nullopt;
  }
  std::string text = util::read_file(p);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return nlohmann::json::object();
  }
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_object()) {
      throw Error(ErrorKind::input, p.string() + ": expected a JSON object", "fix or remove the file");
    }
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // Only the byte offset: nlohmann's message quotes the last token it read ("last read:
    // '\"c2Vj...'"), which in a credentials file can be a secret (found by
    // fuzz_docker_config).
    throw Error(ErrorKind::input,
                p.string() + ": not valid JSON (a syntax error at byte " + std::to_string(e.byte) + ")",
                "fix or remove the file, or run `paddle-image login` again");
  } catch (const nlohmann::json::exception&) {
    // A number too large for any type (out_of_range.406) is thrown by the parser too;
    // its message quotes the number (found by fuzz_docker_config).
    throw Error(ErrorKind::input, p.string() + ": not valid JSON (a number out of range)",
                "fix or remove the file, or run `paddle-image login` again");
  }
}

std::string strip_key(std::string key) {
  for (const char* scheme : {"https://", "http://"}) {
    if (key.rfind(scheme, 0) == 0) {
      key = key.substr(std::string(scheme).size());
    }
  }
  auto slash = key.find('/');
  if (slash != std::string::npos) {
    key = key.substr(0, slash);
  }
  return key;
}

// Reads one "auths" entry.
std::optional<Credential> from_entry(const nlohmann::json& e, const std::string& source) {
  if (!e.is_object()) {
    return std::nullopt;
  }
  Credential c;
  c.source = source;
  auto str = [&](const char* k) { return e.contains(k) && e[k].is_string() ? e[k].get<std::string>() : ""; };
  std::string auth = str("auth");
  if (!auth.empty()) {
    std::string decoded;
    auto colon = std::string::npos;
    if (util::base64_decode(auth, decoded)) {
      colon = decoded.find(':');
    }
    if (colon == std::string::npos) {
      throw Error(ErrorKind::input, source + ": the \"auth\" field is not base64 of user:password",
                  "run `paddle-image login` again");
    }
    c.username = decoded.substr(0, colon);
    c.password = decoded.substr(colon + 1);
  }
  if (c.username.empty()) {
    c.username = str("username");
    c.password = str("password");
  }
  c.identity_token = str("identitytoken");
  c.registry_token = str("registrytoken");
  if (c.anonymous()) {
    return std::nullopt;
  }
  return c;
}

std::optional<Credential> from_auths(const nlohmann::json& cfg, const std::string& host, const std::string& file) {
  if (!cfg.contains("auths") || !cfg["auths"].is_object()) {
    return std::nullopt;
  }
  for (const auto& [key, entry] : cfg["auths"].items()) {
    if (key_matches(key, host)) {
      if (auto c = from_entry(entry, file + " (auths)")) {
        return c;
      }
    }
  }
  return std::nullopt;
}

std::optional<Credential> from_helper(const std::string& helper, const std::string& host, const std::string& what,
                                      std::string& failure) {
  int status = 0;
  std::string out = run_credential_helper(helper, "get", config_key(host), &status);
  if (status != 0) {
    // Helpers say "credentials not found in native keychain" and exit 1 for unknown hosts;
    // anything else is a failure (a locked keychain, a broken helper), said if it matters.
    if (out.find("credentials not found") == std::string::npos && failure.empty()) {
      failure = "docker-credential-" + helper + " get (" + what + ") failed for " + host + " (exit " +
                std::to_string(status) + ")";
    }
    return std::nullopt;
  }
  return parse_helper_output(out, helper, what);
}

void write_private_json(const fs::path& file, const nlohmann::json& j) {
  util::create_dirs(file.parent_path(), "the credentials directory");
  util::AtomicFile out(file);
  if (::fchmod(out.fd(), 0600) != 0) {
    util::throw_errno("chmod " + out.temp_path().string());
  }
  out.write(j.dump(1, '\t') + "\n");
  out.commit();
}

} // namespace

std::optional<Credential> parse_helper_output(const std::string& out, const std::string& helper,
                                              const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  auto str = [&](const char* k) -> std::string {
    if (!j.contains(k)) {
      return {};
    }
    if (!j.at(k).is_string()) {
      throw Error(ErrorKind::auth, "docker-credential-" + helper + " get printed a " + k + " that is not a string",
                  "check the credential helper named by " + what);
    }
    return j.at(k).get<std::string>();
  };
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::auth, "docker-credential-" + helper + " get printed something that is not a JSON object",
                "check the credential helper named by " + what);
  }
  Credential c;
  c.source = "docker-credential-" + helper + " (" + what + ")";
  std::string user = str("Username");
  std::string secret = str("Secret");
  if (user == "<token>") {
    c.identity_token = secret;
  } else {
    c.username = user;
    c.password = secret;
  }
  if (c.anonymous()) {
    return std::nullopt;
  }
  return c;
}

TokenAnswer parse_token_response(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw std::invalid_argument("the answer is not a JSON object");
  }
  TokenAnswer t;
  for (const char* k : {"token", "access_token"}) {
    if (t.token.empty() && j.contains(k) && j.at(k).is_string()) {
      t.token = j.at(k).get<std::string>();
    }
  }
  if (t.token.empty()) {
    throw std::invalid_argument("it has no \"token\" or \"access_token\" string");
  }
  if (j.contains("expires_in") && j.at("expires_in").is_number()) {
    double life = j.at("expires_in").get<double>();
    t.lifetime_s = std::isfinite(life) ? std::clamp(life, 1.0, 86400.0) : 60.0;
  }
  return t;
}

std::string config_key(const std::string& host) {
  return oci::is_docker_hub(host) ? "https://index.docker.io/v1/" : host;
}

bool key_matches(const std::string& key, const std::string& host) {
  std::string k = strip_key(key);
  if (oci::is_docker_hub(host)) {
    return oci::is_docker_hub(k);
  }
  return k == host;
}

CredentialStore::CredentialStore(AuthFiles files) : m_files(std::move(files)) {}

void CredentialStore::set_explicit(const std::string& host, Credential c) {
  m_explicit[host] = std::move(c);
}

Credential CredentialStore::lookup(const std::string& host) const {
  if (auto it = m_explicit.find(host); it != m_explicit.end()) {
    return it->second;
  }
  std::string failure;
  if (auto j = read_json_file(m_files.registry_auth_file)) {
    if (auto c = from_auths(*j, host, m_files.registry_auth_file.string() + " ($REGISTRY_AUTH_FILE)")) {
      return *c;
    }
  }
  fs::path docker = docker_config_file();
  if (auto j = read_json_file(docker)) {
    if (j->contains("credHelpers") && (*j)["credHelpers"].is_object()) {
      for (const auto& [key, helper] : (*j)["credHelpers"].items()) {
        if (key_matches(key, host) && helper.is_string()) {
          if (auto c = from_helper(helper.get<std::string>(), host, docker.string() + " credHelpers", failure)) {
            return *c;
          }
        }
      }
    }
    if (auto c = from_auths(*j, host, docker.string())) {
      return *c;
    }
    if (j->contains("credsStore") && (*j)["credsStore"].is_string()) {
      if (auto c = from_helper((*j)["credsStore"].get<std::string>(), host, docker.string() + " credsStore", failure)) {
        return *c;
      }
    }
  }
  if (auto j = read_json_file(m_files.podman_auth_file)) {
    if (auto c = from_auths(*j, host, m_files.podman_auth_file.string())) {
      return *c;
    }
  }
  Credential none;
  none.failure = failure;
  return none;
}

std::string CredentialStore::store(const std::string& host, const std::string& username,
                                   const std::string& password) const {
  fs::path file = docker_config_file();
  nlohmann::json cfg = read_json_file(file).value_or(nlohmann::json::object());
  std::string key = config_key(host);
  if (cfg.contains("credsStore") && cfg["credsStore"].is_string()) {
    std::string helper = cfg["credsStore"].get<std::string>();
    nlohmann::json in = {{"ServerURL", key}, {"Username", username}, {"Secret", password}};
    int status = 0;
    run_credential_helper(helper, "store", in.dump(), &status);
    if (status != 0) {
      throw Error(ErrorKind::auth, "docker-credential-" + helper + " store failed for " + host,
                  "check the credential helper named by credsStore in " + file.string());
    }
    cfg["auths"][key] = nlohmann::json::object();
    write_private_json(file, cfg);
    return "docker-credential-" + helper;
  }
  cfg["auths"][key] = {{"auth", util::base64_encode(username + ":" + password)}};
  write_private_json(file, cfg);
  return file.string();
}

bool CredentialStore::erase(const std::string& host) const {
  bool found = false;
  for (const fs::path& file : {docker_config_file(), m_files.registry_auth_file, m_files.podman_auth_file}) {
    auto cfg = read_json_file(file);
    if (!cfg || !cfg->contains("auths") || !(*cfg)["auths"].is_object()) {
      continue;
    }
    std::vector<std::string> keys;
    for (const auto& [key, entry] : (*cfg)["auths"].items()) {
      if (key_matches(key, host)) {
        keys.push_back(key);
      }
    }
    for (const auto& k : keys) {
      (*cfg)["auths"].erase(k);
    }
    if (file == docker_config_file() && cfg->contains("credsStore") && (*cfg)["credsStore"].is_string()) {
      int status = 0;
      run_credential_helper((*cfg)["credsStore"].get<std::string>(), "erase", config_key(host), &status);
      found = found || status == 0;
    }
    if (!keys.empty()) {
      write_private_json(file, *cfg);
      found = true;
    }
  }
  return found;
}

std::vector<Challenge> parse_challenges(const std::string& header) {
  // scheme param="value", param=value, ... [, scheme2 ...]
  std::vector<Challenge> out;
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < header.size() && (header[i] == ' ' || header[i] == '\t' || header[i] == ',')) {
      ++i;
    }
  };
  while (true) {
    skip_ws();
    if (i >= header.size()) {
      break;
    }
    std::size_t start = i;
    while (i < header.size() && header[i] != ' ' && header[i] != '=' && header[i] != ',') {
      ++i;
    }
    std::string token = header.substr(start, i - start);
    if (token.empty() && out.empty()) {
      ++i; // "=..." before any scheme: not a challenge (RFC 7235 needs a scheme token first)
      continue;
    }
    if (i < header.size() && header[i] == '=' && !out.empty()) {
      // A parameter of the current challenge.
      ++i;
      std::string value;
      if (i < header.size() && header[i] == '"') {
        ++i;
        while (i < header.size() && header[i] != '"') {
          if (header[i] == '\\' && i + 1 < header.size()) {
            ++i;
          }
          value += header[i++];
        }
        ++i;
      } else {
        while (i < header.size() && header[i] != ',') {
          value += header[i++];
        }
      }
      std::string key;
      for (char ch : token) {
        key += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      }
      out.back().params[key] = value;
    } else {
      Challenge c;
      for (char ch : token) {
        c.scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      }
      out.push_back(c);
    }
  }
  return out;
}

namespace {

// What a credential helper may take and print: its answer is a small JSON object.
constexpr std::size_t k_helper_max_output = 1u << 20;
std::atomic<long> g_helper_deadline_s{30};

// Kills and reaps a helper that broke its contract (too slow, too much output).
[[noreturn]] void abandon_helper(pid_t pid, int out_fd, const std::string& prog, const std::string& action,
                                 const std::string& why) {
  ::kill(pid, SIGKILL);
  ::close(out_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  throw Error(ErrorKind::auth, prog + " " + action + " " + why, "check the credential helper");
}

// Starts PROG ACTION with pipes on its stdin and stdout; their other ends come back in
// *to_helper and *from_helper.
pid_t spawn_helper(const std::string& prog, const std::string& action, int* to_helper, int* from_helper) {
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    util::throw_errno("pipe");
  }
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    util::throw_errno("pipe");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  // The helper's stderr may echo what it was given; it never reaches our output.
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  // paddle-image ignores SIGPIPE (util::install_interrupt_handlers); the helper gets
  // the default back, as if started from a shell.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv = {const_cast<char*>(prog.c_str()), const_cast<char*>(action.c_str()), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, prog.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    throw Error(ErrorKind::auth, "cannot run credential helper " + prog + ": " + std::strerror(rc),
                "install " + prog + " on PATH or remove it from the docker config");
  }
  *to_helper = in_pipe[1];
  *from_helper = out_pipe[0];
  return pid;
}

// Writes the helper its input and closes the pipe.
void give_helper_input(int fd, const std::string& input) {
  // The input is a host name or a small JSON object, well under a pipe's buffer; a
  // helper that exits without reading it gives EPIPE here, and its exit status then says
  // what happened. SIGPIPE is blocked for this thread while writing, so the same holds
  // where the process has not ignored it (a library caller, the fuzz target): a SIGPIPE
  // raised here is taken off the pending set before it is unblocked.
  sigset_t pipe_only, before;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
  std::size_t off = 0;
  while (off < input.size()) {
    ssize_t n = ::write(fd, input.data() + off, input.size() - off);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (!sigismember(&before, SIGPIPE)) {
    const struct timespec zero { 0, 0 };
    while (::sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
    }
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
}

// The helper's whole answer (the pipe is closed after).
std::string read_helper_answer(pid_t pid, int fd, const std::string& prog, const std::string& action) {
  // Its answer: within a total deadline and a size cap, so a helper that hangs or
  // prints without end cannot hold paddle-image for ever.
  std::string out;
  char buf[4096];
  const long deadline_s = g_helper_deadline_s.load();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      abandon_helper(pid, fd, prog, action, "did not answer within " + std::to_string(deadline_s) + " s (--timeout)");
    }
    if (util::interrupted() != 0) {
      ::kill(pid, SIGTERM);
      ::close(fd);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      util::throw_interrupted();
    }
    struct pollfd pfd {
      fd, POLLIN, 0
    };
    int p = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
    if (p < 0 && errno != EINTR) {
      abandon_helper(pid, fd, prog, action, std::string("could not be read: ") + std::strerror(errno));
    }
    if (p <= 0) {
      continue;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    if (out.size() + static_cast<std::size_t>(n) > k_helper_max_output) {
      abandon_helper(pid, fd, prog, action, "printed more than " + std::to_string(k_helper_max_output >> 20) + " MiB");
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

} // namespace

void set_credential_helper_timeout(long seconds) {
  g_helper_deadline_s = std::max(1L, seconds);
}

std::string run_credential_helper(const std::string& name, const std::string& action, const std::string& input,
                                  int* exit_status) {
  std::string prog = "docker-credential-" + name;
  int to_helper = -1;
  int from_helper = -1;
  pid_t pid = spawn_helper(prog, action, &to_helper, &from_helper);
  give_helper_input(to_helper, input);
  std::string out = read_helper_answer(pid, from_helper, prog, action);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  if (exit_status) {
    *exit_status = code;
  } else if (code != 0) {
    throw Error(ErrorKind::auth, prog + " " + action + " failed (exit " + std::to_string(code) + ")",
                "check the credential helper");
  }
  return out;
}

} // namespace registry
