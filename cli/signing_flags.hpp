#pragma once
// What `sign`, `attest`, `verify`, `sbom` and `build --sign` share: the key flags and
// passphrase sources (COSIGN_PASSWORD, --passphrase-file, a prompt on a terminal),
// and an image reference opened as a place to read and add attachments.
#include "cli/registry_flags.hpp"
#include "oci/attachment.hpp"
#include "oci/layout.hpp"
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
signing::PrivateKey load_private_key(const KeyFlags& f);
signing::PublicKey load_public_key(const std::string& path);

// An image reference opened for signing or verifying: the image, the digest its
// reference names, the identity a signature carries by default, and (when opened for
// writing) where attachments go. Layouts are locked while it lives.
struct SignTarget {
  oci::ImageRef ref;
  oci::ImagePtr image;
  oci::Digest digest;
  std::string identity;     // "host/repo:tag" (layouts: the image's title and the tag)
  std::string subject_name; // "host/repo" (layouts: the title)
  std::unique_ptr<oci::OciLayout::DirLock> lock;
  std::unique_ptr<oci::OciLayout> layout;
  std::unique_ptr<oci::AttachmentStore> store;
  // The reference with the digest it resolved to, once: "host/repo:tag@sha256:..", or
  // the reference as given when it already names that digest.
  std::string shown() const { return ref.digest == digest.str() ? ref.str() : ref.str() + "@" + digest.str(); }
};
// `identity_flag` overrides the identity; a layout image without a title needs it.
SignTarget open_sign_target(const std::string& text, RegistrySession& sess, const std::string& identity_flag,
                            bool writable);

// A checked RFC 3339 time for "now" (the provenance's clock lives in cli).
std::string now_rfc3339();
// A random UUIDv4 (the build's invocation id).
std::string random_uuid();

} // namespace cli
