#include "cli/signing_flags.hpp"

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

signing::PrivateKey load_private_key(const KeyFlags& f, const std::string& flag) {
  std::string text = read_text(f.key, flag);
  // An unencrypted key's text is key material: wiped however the read ends.
  struct Wipe {
    std::string& s;
    ~Wipe() { ::explicit_bzero(s.data(), s.size()); }
  } wipe{text};
  return signing::PrivateKey::from_pem(text, f.key, [&] { return read_passphrase(f.passphrase_file, false); });
}

signing::PublicKey load_public_key(const std::string& path, const std::string& flag) {
  return signing::PublicKey::from_pem(read_text(path, flag), path);
}

SignTarget open_sign_target(const std::string& text, RegistrySession& sess, const std::string& identity_flag,
                            bool writable) {
  return imageio::open_sign_target(
      text, [&sess](const std::string& host) { return sess.connect(host); }, identity_flag, writable);
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
