#pragma once
// Registry credentials: where they come from (docker and podman config files,
// credential helpers, the command line) and the `WWW-Authenticate` challenges that
// say how to use them. A Credential remembers its source so errors can name it; its
// secret fields are never printed.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace registry {

namespace fs = std::filesystem;

struct Credential {
  std::string username;
  std::string password;
  std::string identity_token; // OAuth2 refresh token ("identitytoken")
  std::string registry_token; // a bearer token used as is ("registrytoken")
  std::string source;         // e.g. "/root/.docker/config.json (auths)"; "" = anonymous
  bool anonymous() const { return username.empty() && identity_token.empty() && registry_token.empty(); }
  // Anonymous because a credential helper failed (exited non-zero with anything but the
  // protocol's "credentials not found" answer): which one, for the error a refusal
  // gives ("" when nothing failed). Never holds what the helper printed.
  std::string failure;
};

// Paths the CLI takes from the environment ($DOCKER_CONFIG, $REGISTRY_AUTH_FILE,
// $XDG_RUNTIME_DIR, $HOME); nothing below cli/ reads the environment.
struct AuthFiles {
  fs::path docker_config_dir;  // $DOCKER_CONFIG or ~/.docker
  fs::path registry_auth_file; // $REGISTRY_AUTH_FILE (may be empty)
  fs::path podman_auth_file;   // $XDG_RUNTIME_DIR/containers/auth.json (may be empty)
};

class CredentialStore {
public:
  explicit CredentialStore(AuthFiles files);
  // Credentials for a registry host ("host[:port]"), in this order: a credential set
  // with set_explicit (--username/--password-stdin), $REGISTRY_AUTH_FILE, the docker
  // config (credHelpers, then auths, then credsStore), podman's auth.json. Anonymous
  // when none has an entry.
  Credential lookup(const std::string& host) const;
  void set_explicit(const std::string& host, Credential c);
  // `login`: stores user/password for host in the docker config (through credsStore
  // when one is configured), atomically, mode 0600. Returns where it went.
  std::string store(const std::string& host, const std::string& username, const std::string& password) const;
  // `logout`: removes host from the docker config and the auth files; false when no
  // entry existed.
  bool erase(const std::string& host) const;
  fs::path docker_config_file() const { return m_files.docker_config_dir / "config.json"; }

private:
  AuthFiles m_files;
  std::map<std::string, Credential> m_explicit;
};

// The key a config file uses for host: docker.io maps to "https://index.docker.io/v1/".
std::string config_key(const std::string& host);
// Compares an "auths" key (possibly "https://host/v1/") with a host.
bool key_matches(const std::string& key, const std::string& host);

// One challenge from WWW-Authenticate: scheme ("bearer", "basic") and parameters.
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
};
std::vector<Challenge> parse_challenges(const std::string& header);

// A token server's answer (the distribution token spec and OAuth2): "token" or
// "access_token", and "expires_in" seconds (60 when absent; kept within 1 s .. 1 day,
// whatever the server says). Throws std::invalid_argument saying what is missing.
struct TokenAnswer {
  std::string token;
  double lifetime_s = 60;
};
TokenAnswer parse_token_response(const std::string& body);

// What `docker-credential-NAME get` printed: {"Username", "Secret"}; a Username of
// "<token>" makes Secret an identity token. Nothing (nullopt) for an empty answer.
// Throws util::Error(auth) naming the helper and `what` (the config entry that names
// it), never the output, when it is not such a JSON object.
std::optional<Credential> parse_helper_output(const std::string& out, const std::string& helper,
                                              const std::string& what);

// The deadline for a credential helper's whole answer (--timeout; default 30 s).
void set_credential_helper_timeout(long seconds);

// Runs `docker-credential-NAME ACTION` with input on stdin; returns stdout. Throws
// util::Error(auth) naming the helper (never the secret) when it fails: it cannot be
// started, exits non-zero, prints more than 1 MiB or does not finish within the
// deadline. A helper that exits without reading its input is not a SIGPIPE.
std::string run_credential_helper(const std::string& name, const std::string& action, const std::string& input,
                                  int* exit_status = nullptr);

} // namespace registry
