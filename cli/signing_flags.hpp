#pragma once
// What `sign`, `attest`, `verify`, `sbom` and `build --sign` share: the key flags and
// passphrase sources (COSIGN_PASSWORD, --passphrase-file, a prompt on a terminal),
// and an image reference opened as a place to read and add attachments (through
// imageio::open_sign_target, with the command's registry session).
#include "cli/registry_flags.hpp"
#include "imageio/attach.hpp"
#include "signing/keys.hpp"

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace cli {

struct KeyFlags {
  std::string key;
  std::string passphrase_file;
  void add(CLI::App* c, const std::string& key_help);
};

// The passphrase: --passphrase-file (one trailing newline dropped), else
// COSIGN_PASSWORD (set but empty is an explicit empty passphrase), else a prompt on a
// terminal (twice when `confirm`); none of them is a usage error.
std::string read_passphrase(const std::string& passphrase_file, bool confirm, bool* explicit_empty = nullptr);
signing::PrivateKey load_private_key(const KeyFlags& f, const std::string& flag = "--key");
// `flag` names the option the file came from in errors (a missing or unreadable file).
signing::PublicKey load_public_key(const std::string& path, const std::string& flag = "--key");

using imageio::SignTarget;
// `identity_flag` overrides the identity; a layout image without a title needs it.
SignTarget open_sign_target(const std::string& text, RegistrySession& sess, const std::string& identity_flag,
                            bool writable);

// A checked RFC 3339 time for "now" (the provenance's clock lives in cli).
std::string now_rfc3339();
// A random UUIDv4 (the build's invocation id).
std::string random_uuid();

} // namespace cli
