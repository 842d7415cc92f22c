#include "debian/install.hpp"

#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

namespace debian {

using util::Error;
using util::ErrorKind;

std::string info_name(const Paragraph& control) {
  std::string name = control.value("Package");
  if (control.value("Multi-Arch") == "same") {
    name += ":" + control.value("Architecture");
  }
  return name;
}

namespace {

bool same_field(const std::string& a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Fields dpkg writes itself from what it did: in a package's control file dpkg refuses
// them ("value for 'Status' field not allowed in this context").
constexpr std::string_view k_dpkg_fields[] = {"Status", "Conffiles", "Config-Version", "Triggers-Pending",
                                              "Triggers-Awaited"};
// Fields only an archive's index has (where the file is, its hashes): dpkg does not
// keep them for an installed package.
constexpr std::string_view k_index_fields[] = {"Filename", "Size",   "MD5sum",         "SHA1",
                                               "SHA256",   "SHA512", "MSDOS-Filename", "Description-md5"};

} // namespace

Paragraph status_paragraph(const Paragraph& control, const std::vector<std::pair<std::string, std::string>>& conffiles,
                           const std::string& what) {
  Paragraph p;
  p.fields.emplace_back("Package", control.value("Package"));
  p.fields.emplace_back("Status", "install ok installed");
  for (const auto& f : control.fields) {
    for (auto refused : k_dpkg_fields) {
      if (same_field(f.first, refused)) {
        throw Error(ErrorKind::input,
                    what + ": its control file has a '" + f.first +
                        "' field, which dpkg writes itself (dpkg: value for '" + std::string(refused) +
                        "' field not allowed in this context)",
                    "the package is badly built or forged: rebuild it without the field (conffiles belong in the "
                    "conffiles member), or leave it out");
      }
    }
    bool index_only = false;
    for (auto dropped : k_index_fields) {
      index_only = index_only || same_field(f.first, dropped);
    }
    if (!index_only && !same_field(f.first, "Package")) {
      p.fields.push_back(f);
    }
  }
  if (!conffiles.empty()) {
    std::string v;
    for (const auto& [path, md5] : conffiles) {
      v += "\n " + path + " " + md5;
    }
    p.set("Conffiles", v, "Description");
  }
  return p;
}

std::string merged_status(const std::string& base_status, const std::vector<Paragraph>& added) {
  std::vector<Paragraph> all = parse_paragraphs(base_status, "the base's var/lib/dpkg/status");
  all.insert(all.end(), added.begin(), added.end());
  std::stable_sort(all.begin(), all.end(), [](const Paragraph& a, const Paragraph& b) {
    return std::make_pair(a.value("Package"), a.value("Architecture")) <
           std::make_pair(b.value("Package"), b.value("Architecture"));
  });
  std::string out;
  for (const auto& p : all) {
    out += p.text();
    out += '\n';
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> info_files(const DebControl& deb,
                                                            const std::vector<std::string>& paths) {
  const std::string name = info_name(deb.control);
  std::vector<std::pair<std::string, std::string>> out;
  std::string list;
  for (const auto& p : paths) {
    list += p.empty() ? "/.\n" : "/" + p + "\n";
  }
  out.emplace_back(name + ".list", list);
  for (const auto& [member, content] : deb.files) {
    // dpkg keeps every control member but `control` (which the status holds) here.
    out.emplace_back(name + "." + member, content);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> conffile_paths(const DebControl& deb) {
  std::vector<std::string> out;
  auto it = deb.files.find("conffiles");
  if (it == deb.files.end()) {
    return out;
  }
  std::istringstream in(it->second);
  for (std::string line; std::getline(in, line);) {
    std::string t = util::trim(line);
    // "remove-on-upgrade /etc/x" names a file the package no longer ships.
    if (t.rfind("remove-on-upgrade ", 0) == 0 || t.empty()) {
      continue;
    }
    out.push_back(t);
  }
  return out;
}

namespace {

// A line of a debhelper section that is a no-op or done already on a first install:
// dpkg-maintscript-helper's conffile and directory moves (they act on upgrades from
// the version they name), ldconfig (the loader searches its default directories
// without a cache), dh_python3's byte-compiling (Python compiles at first import).
bool harmless_in_section(const std::string& t) {
  static const std::regex helper(
      R"(^dpkg-maintscript-helper (rm_conffile|mv_conffile|symlink_to_dir|dir_to_symlink) .*-- "\$@"$)");
  static const std::regex configure(R"(^if \[ "\$1" = "configure" \]; then$)");
  static const std::regex has_compile(R"(^if (command -v|which) (py3compile|pypy3compile) >/dev/null 2>&1; then$)");
  static const std::regex compile(R"(^(py3compile|pypy3compile) -p [a-z0-9.+-]+( +[^;&|`$]*)?( \|\| true)?$)");
  return std::regex_match(t, helper) || std::regex_match(t, configure) || std::regex_match(t, has_compile) ||
         std::regex_match(t, compile) || t == "ldconfig" || t == "fi";
}

// Scripts read line by line and found to change nothing on a fresh install into an
// image, by package and the script's SHA-256 (docs/spec.md "Maintainer scripts" lists
// them with the reasons). Another version of the script is refused until reviewed.
struct Reviewed {
  const char* package;
  const char* script;
  const char* sha256;
};
constexpr Reviewed k_reviewed[] = {
    // lm-sensors (Debian 12): on install, removes /etc/sensors3.conf only when it equals
    // the old sample and asks ucf to forget it: the image has neither.
    {"libsensors5", "preinst", "880602913ee37a9108f669524d13d381b288369e6898dedcd5d6358cf9d4348c"},
};

bool reviewed(const std::string& package, const std::string& script, const std::string& content) {
  std::string sum = util::sha256_hex(content);
  for (const auto& r : k_reviewed) {
    if (package == r.package && script == r.script && sum == r.sha256) {
      return true;
    }
  }
  return false;
}

// Blank lines, comments, `set -e`, `exit 0`, and the shell's control words, which do
// nothing themselves (the refusal then names the first line that runs a command).
bool harmless_outside(const std::string& t) {
  static const std::regex control(R"(^(case .* in|esac|;;|[a-z|*-]+\)|then|fi|else|do|done|\{|\})$)");
  return t.empty() || t.front() == '#' || t == "set -e" || t == "set -eu" || t == "set -e -u" || t == "exit 0" ||
         std::regex_match(t, control);
}

// "#!/bin/sh", "#! /bin/bash -e", "#!/usr/bin/env sh": shells, whose lines are read here.
bool shell_interpreter(const std::string& shebang) {
  static const std::regex sh(R"(^#!\s*(/usr)?/bin/(env\s+)?(sh|bash|dash)(\s+-[a-z]+)*$)");
  return std::regex_match(shebang, sh);
}

// A package's triggers file: activating the `ldconfig` trigger (dh_makeshlibs' line) is
// what the layer does itself; any other trigger, or an interest in one, runs a script.
void check_triggers(const DebControl& deb, const std::string& what, MaintainerSteps& steps) {
  auto it = deb.files.find("triggers");
  if (it == deb.files.end()) {
    return;
  }
  static const std::regex ldconfig(R"(^activate(-noawait|-await)?\s+ldconfig$)");
  std::istringstream in(it->second);
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    std::string t = util::trim(line);
    if (t.empty() || t.front() == '#') {
      continue;
    }
    if (std::regex_match(t, ldconfig)) {
      steps.ldconfig = true;
      continue;
    }
    throw Error(ErrorKind::input,
                what + ": its triggers file (line " + std::to_string(lineno) + ": '" + t.substr(0, 120) +
                    "') asks dpkg to run " +
                    (t.rfind("interest", 0) == 0 ? "this package's postinst when the trigger fires"
                                                 : "another package's trigger script") +
                    ", and a debs layer runs no maintainer script",
                "install it with a files layer built by a tool that runs its scripts, or leave it out; a debs layer "
                "does only the ldconfig trigger (docs/spec.md \"Maintainer scripts\")");
  }
}

} // namespace

MaintainerSteps check_maintainer_scripts(const DebControl& deb, const std::string& what) {
  MaintainerSteps steps;
  for (const char* script : {"preinst", "postinst", "config"}) {
    auto it = deb.files.find(script);
    if (it == deb.files.end() || reviewed(deb.control.value("Package"), script, it->second)) {
      continue;
    }
    std::istringstream in(it->second);
    bool in_section = false;
    int lineno = 0;
    for (std::string line; std::getline(in, line);) {
      ++lineno;
      std::string t = util::trim(line);
      if (lineno == 1 && t.rfind("#!", 0) == 0 && !shell_interpreter(t)) {
        throw Error(ErrorKind::input,
                    what + ": its " + script + " runs " + t.substr(2, 120) +
                        ", not a shell a debs layer can read: its steps cannot be checked",
                    "install it with a files layer built by a tool that runs its scripts, or leave it out");
      }
      if (t.rfind("# Automatically added by dh_", 0) == 0) {
        in_section = true;
        continue;
      }
      if (t == "# End automatically added section") {
        in_section = false;
        continue;
      }
      if (t == "ldconfig" || t == "/sbin/ldconfig" || t == "/usr/sbin/ldconfig") {
        steps.ldconfig = true; // done by the layer: it writes etc/ld.so.cache
        continue;
      }
      if (in_section ? (t.empty() || harmless_in_section(t)) : harmless_outside(t)) {
        continue;
      }
      throw Error(ErrorKind::input,
                  what + ": its " + script + " (sha256 " + util::sha256_hex(it->second) + ", line " +
                      std::to_string(lineno) + ": '" + t.substr(0, 120) +
                      "') does more than a debs layer does, which runs no maintainer script" +
                      (std::string(script) == "config" ? " and asks no debconf question" : ""),
                  "install it with a files layer built by a tool that runs its scripts, or leave it out; the "
                  "accepted script steps are listed in docs/spec.md (\"Maintainer scripts\")");
    }
  }
  check_triggers(deb, what, steps);
  return steps;
}

} // namespace debian
