#include "cli/signing_flags.hpp"

#include "oci/layout_image.hpp"
#include "registry/transfer.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <string.h>
#include <termios.h>
#include <unistd.h>

namespace cli {

using util::Error;
using util::ErrorKind;

namespace {

// Reads one line from the terminal with echo off.
std::string prompt(const std::string& text) {
  std::cerr << text << std::flush;
  termios old{};
  bool restore = ::tcgetattr(STDIN_FILENO, &old) == 0;
  if (restore) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  std::string line;
  std::getline(std::cin, line);
  if (restore) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
  }
  std::cerr << "\n";
  return line;
}

std::string read_text(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(ErrorKind::input, what + " " + path + " does not exist or is not a file", "check the path");
  }
  return util::read_file(path);
}

// "host/repo" of an image title that names its registry ("registry.example.com/ocr/
// train"); "" for a bare name ("ocr" would read as docker.io/library/ocr, which is
// rarely where the image goes: such images are signed with --identity).
std::string signing_repository(const std::string& title) {
  std::string first = title.substr(0, title.find('/'));
  bool has_host =
      title.find('/') != std::string::npos &&
      (first.find('.') != std::string::npos || first.find(':') != std::string::npos || first == "localhost");
  if (!has_host) {
    return {};
  }
  try {
    oci::ImageRef r = oci::ImageRef::parse(title);
    if (r.kind == oci::ImageRef::Kind::registry && r.digest.empty()) {
      return r.name();
    }
  } catch (const Error&) {
    // Not a reference: no identity can come from it.
  }
  return {};
}

} // namespace

void KeyFlags::add(CLI::App* c, const std::string& key_help) {
  c->add_option("--key", key, key_help)->required();
  c->add_option("--passphrase-file", passphrase_file,
                "Read the key's passphrase from this file (default $COSIGN_PASSWORD, else a prompt on a terminal)");
}

std::string read_passphrase(const std::string& passphrase_file, bool confirm, bool* explicit_empty) {
  if (explicit_empty != nullptr) {
    *explicit_empty = false;
  }
  if (!passphrase_file.empty()) {
    std::string p = read_text(passphrase_file, "--passphrase-file");
    if (!p.empty() && p.back() == '\n') {
      p.pop_back();
      if (!p.empty() && p.back() == '\r') {
        p.pop_back();
      }
    }
    return p;
  }
  if (const char* env = std::getenv("COSIGN_PASSWORD"); env != nullptr) {
    if (explicit_empty != nullptr) {
      *explicit_empty = *env == '\0';
    }
    return env;
  }
  if (::isatty(STDIN_FILENO) != 1) {
    throw Error(ErrorKind::usage, "the key needs a passphrase and there is no terminal to ask for it",
                "set COSIGN_PASSWORD or pass --passphrase-file");
  }
  std::string p = prompt("Enter passphrase for the private key: ");
  if (confirm && prompt("Enter it again: ") != p) {
    throw Error(ErrorKind::usage, "the two passphrases differ", "run the command again");
  }
  return p;
}

signing::PrivateKey load_private_key(const KeyFlags& f) {
  std::string text = read_text(f.key, "--key");
  // An unencrypted key's text is key material: wiped however the read ends.
  struct Wipe {
    std::string& s;
    ~Wipe() { ::explicit_bzero(s.data(), s.size()); }
  } wipe{text};
  return signing::PrivateKey::from_pem(text, f.key, [&] { return read_passphrase(f.passphrase_file, false); });
}

signing::PublicKey load_public_key(const std::string& path) {
  return signing::PublicKey::from_pem(read_text(path, "--key"), path);
}

SignTarget open_sign_target(const std::string& text, RegistrySession& sess, const std::string& identity_flag,
                            bool writable) {
  SignTarget t;
  t.ref = oci::ImageRef::parse(text);
  switch (t.ref.kind) {
  case oci::ImageRef::Kind::docker_archive:
    throw Error(ErrorKind::usage, text + ": a docker-archive cannot carry signatures or attestations",
                "sign the image in an OCI layout (oci:DIR:TAG) or in a registry");
  case oci::ImageRef::Kind::registry: {
    auto reg = sess.connect(t.ref.registry);
    t.image = registry::open_registry_image(reg, t.ref);
    t.subject_name = t.ref.name();
    t.identity = t.ref.tag.empty() ? t.ref.name() : t.ref.name() + ":" + t.ref.tag;
    if (writable) {
      t.store = std::make_unique<registry::RegistryAttachments>(reg, t.ref.repository);
    }
    break;
  }
  case oci::ImageRef::Kind::oci_layout: {
    std::error_code ec;
    if (!std::filesystem::is_directory(t.ref.path, ec)) {
      throw Error(ErrorKind::input, text + ": no OCI layout at " + t.ref.path, "build or pull the image first");
    }
    if (writable) {
      t.lock = oci::OciLayout::lock_dir(t.ref.path);
      t.layout = std::make_unique<oci::OciLayout>(oci::OciLayout::open_existing(t.ref.path));
      t.store = std::make_unique<oci::LayoutAttachments>(*t.layout);
    }
    t.image = oci::open_layout_image(t.ref.path, t.ref.tag, t.ref.str());
    std::string title;
    if (!t.image->root().is_index()) {
      oci::Manifest m = oci::manifest_from_json(oci::parse_json(t.image->root().bytes, "manifest of " + text));
      oci::ImageConfig c = oci::read_config(*t.image, m);
      auto it = c.config.labels.find("org.opencontainers.image.title");
      if (it != c.config.labels.end()) {
        title = it->second;
      }
    }
    if (!signing_repository(title).empty()) {
      t.subject_name = signing_repository(title);
      std::string tag = t.ref.tag;
      if (tag.empty()) {
        // The tag the layout's one image goes by.
        for (const auto& m : oci::OciLayout::open_existing(t.ref.path).read_index().manifests) {
          auto a = m.annotations.find(oci::k_ref_name_annotation);
          if (m.digest == t.image->root().digest && a != m.annotations.end() && !oci::is_attachment_tag(a->second)) {
            tag = a->second;
            break;
          }
        }
      }
      t.identity = tag.empty() ? t.subject_name : t.subject_name + ":" + tag;
    }
    if (identity_flag.empty() && t.identity.empty()) {
      throw Error(ErrorKind::usage,
                  text + ": the image's org.opencontainers.image.title does not name a registry repository, so its "
                         "signed identity is unknown",
                  "pass --identity REGISTRY/REPO:TAG (the reference the image will be pulled as)");
    }
    break;
  }
  }
  t.digest = t.image->root().digest;
  if (!identity_flag.empty()) {
    oci::ImageRef id = util::with_context("--identity", [&] { return oci::ImageRef::parse(identity_flag); });
    if (id.kind != oci::ImageRef::Kind::registry || !id.digest.empty()) {
      throw Error(ErrorKind::usage, "--identity '" + identity_flag + "' is not a registry reference without a digest",
                  "e.g. --identity registry.example.com/team/ocr:1.4");
    }
    t.identity = id.tag_defaulted ? id.name() : id.name() + ":" + id.tag;
    t.subject_name = id.name();
  }
  return t;
}

std::string now_rfc3339() {
  return util::rfc3339_utc(static_cast<std::int64_t>(std::time(nullptr)));
}

std::string random_uuid() {
  std::random_device rd;
  std::string hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) {
    unsigned v = rd() & 15u;
    if (i == 12) {
      v = 4;
    } else if (i == 16) {
      v = 8 | (v & 3u);
    }
    if (i == 8 || i == 12 || i == 16 || i == 20) {
      out += '-';
    }
    out += hex[v];
  }
  return out;
}

} // namespace cli
