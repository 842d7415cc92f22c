// RUN: its commands (split at && and ;), each to the family that maps it, and the hint for
// a command no spec expresses.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// A RUN's words as its commands: split at `&&` and `;` (also a word ending in ';', "libgl1;").
std::vector<std::vector<std::string>> Mapper::segments(const std::vector<std::string>& w) {
  std::vector<std::vector<std::string>> segs(1);
  for (const auto& t : w) {
    if (t == "&&" || t == ";") {
      segs.emplace_back();
    } else if (t.size() > 1 && t.back() == ';') {
      segs.back().push_back(t.substr(0, t.size() - 1));
      segs.emplace_back();
    } else {
      segs.back().push_back(t);
    }
  }
  return segs;
}

// A hint specific to a command a spec cannot run, by its name.
std::string Mapper::command_hint(const std::vector<std::string>& seg) {
  const std::string& c = seg[0];
  if (c == "wget" || c == "curl") {
    std::string url;
    for (const auto& a : seg) {
      if (is_remote_source(a) && url.empty()) {
        url = util::redact_text(a);
      }
    }
    return "downloads at build time, in a form not mapped (stdout, headers, a pipe): make it a download rule of "
           "a data layer, {url: " +
           (url.empty() ? std::string("URL") : url) +
           ", to: DEST} (extract: true, strip_components and include for an archive that tar or unzip unpacks "
           "after it), and run paddle-image lock --sources to pin its sha256";
  }
  if (c == "git") {
    std::string url;
    std::string ref = "BRANCH-OR-TAG";
    for (std::size_t i = 2; i < seg.size() && seg[1] == "clone"; ++i) {
      if ((seg[i - 1] == "-b" || seg[i - 1] == "--branch")) {
        ref = seg[i];
      } else if (seg[i].rfind("-", 0) != 0 && url.empty() && seg[i - 1] != "--depth") {
        url = util::redact_text(seg[i]);
      }
    }
    return "clones code at build time, with more than a checkout after it (or submodules, which a git source "
           "does not export): make it a git source of a files layer, {git: " +
           (url.empty() ? std::string("URL") : url) + ", ref: " + ref +
           ", to: DEST}, pinned by paddle-image lock --sources, and do the rest outside";
  }
  if (c == "tar" || c == "unzip") {
    return "unpacks an archive at build time: unpack it into the project and copy the directory";
  }
  if (c == "mkdir") {
    return "creates a directory with an option a directory rule does not take (a symbolic mode, -Z): write "
           "{directory: PATH, mode: \"0755\"} in a files layer";
  }
  if (c == "chmod" || c == "chown") {
    return "changes modes or owners: give the copy rule that ships the file `mode:` or `owner:`";
  }
  if (c == "ln") {
    return "makes a link: put the symlink in the project and copy it (copy rules keep symlinks)";
  }
  if (c == "echo" && seg.size() >= 4 && seg[2] == ">>" && seg[1].rfind("export ", 0) == 0 &&
      seg[3].find("bashrc") != std::string::npos && seg[1].find('=') != std::string::npos) {
    const std::string kv = seg[1].substr(7);
    const std::string name = kv.substr(0, kv.find('='));
    return "sets " + name + " for interactive shells (.bashrc): put it in config.env (" + name + ": " +
           kv.substr(kv.find('=') + 1) + "), which every process of the container sees";
  }
  if (c == "echo" || c == "sed" || c == "printf" || c == "cat") {
    return "writes or edits a file in the image: ship the finished file in a files layer";
  }
  if (c == "locale-gen" || c == "update-locale" || c == "localedef") {
    return "generates locales: set LANG=C.UTF-8 in config.env (every Debian and Ubuntu base has that locale)";
  }
  if (c == "make" || c == "cmake" || c == "ninja" || c == "gcc" || c == "g++" || c == "go" || c == "cargo" ||
      c == "npm" || c == "yarn" || c == "nvcc") {
    return "compiles or builds at build time: build it outside (or in CI) and copy what it makes with a files rule";
  }
  if (c == "conda" || c == "mamba") {
    return "installs with conda: a spec installs wheels; export the environment's pip packages to a "
           "requirements file for a wheels layer";
  }
  if (c == "python" || c == "python3" || c.rfind("python3.", 0) == 0 || c == "bash" || c == "sh" ||
      c.rfind("./", 0) == 0) {
    return "runs a program at build time: run it outside and copy what it makes";
  }
  return "RUN executes a command at build time; paddle-image runs nothing (put its result in the base or a layer)";
}

// RUN: its commands (split at && and ;) mapped when each is one a spec expresses (pip
// install: a wheels layer; apt-get install: the debs layer; ln -s: symlink rules;
// mkdir: directory rules; chmod of what those or copy rules made: their mode; useradd,
// groupadd: the accounts layer) or needs
// nothing for (apt-get update and clean, rm, cd, a pip self-upgrade, pip cache purge).
void Mapper::run(const std::string& args) {
  if (auto j = json_form(args)) {
    skip("RUN executes a command at build time; paddle-image runs nothing (put its result in the base or a layer)");
    return;
  }
  bool vars = false;
  auto w = words(args, &vars);
  if (apt_run(w, vars)) {
    return;
  }
  std::vector<std::vector<std::string>> segs = segments(w);
  std::string cwd = m.workdir.empty() ? "/" : m.workdir;
  if (!vars && (git_clone(segs, cwd) || download_run(segs, cwd))) {
    return;
  }
  RunParts parts;
  for (auto seg : segs) {
    while (!seg.empty() && seg[0].find('=') != std::string::npos && seg[0][0] != '-') {
      seg.erase(seg.begin());
    }
    if (!seg.empty() && !run_segment(seg, vars, cwd, parts)) {
      return;
    }
  }
  if (vars) {
    skip(unresolved());
    return;
  }
  apply_run(parts);
}

// One command of a RUN (cwd follows its cd): into `parts`, or false once skip() has
// said why the RUN does not map.
bool Mapper::run_segment(const std::vector<std::string>& seg, bool vars, std::string& cwd, RunParts& parts) {
  if (seg[0] == "cd" && seg.size() == 2) {
    cwd = join_path(cwd, seg[1]);
    return true;
  }
  if (seg[0] == "rm" || (seg[0] == "apt-get" && seg.size() >= 2 && (seg[1] == "clean" || seg[1] == "update"))) {
    parts.harmless.push_back(util::join(seg, " "));
    return true;
  }
  if (seg[0] == "ulimit") {
    parts.harmless.push_back(util::join(seg, " ") +
                             " (a limit of this RUN's own shell, which leaves nothing in the image)");
    return true;
  }
  if (!vars) {
    if (seg[0] == "ln") {
      if (auto link = link_command(seg, cwd)) {
        parts.links.push_back(*link);
        return true;
      }
    }
    if (auto kv = bashrc_export(seg)) {
      parts.exports.push_back(*kv);
      return true;
    }
    if (seg[0] == "mkdir") {
      if (auto made = mkdir_command(seg, cwd)) {
        parts.dirs.insert(parts.dirs.end(), made->begin(), made->end());
        return true;
      }
    }
    if (account_command(seg[0])) {
      if (auto why = add_account(seg, parts.accounts)) {
        skip(*why);
        return false;
      }
      return true;
    }
    if (seg[0] == "chmod" && chmod_of_copies(seg, cwd, parts.dirs)) {
      parts.chmods.push_back(util::join(seg, " "));
      return true;
    }
  }
  return pip_segment(seg, cwd, parts.pips, parts.harmless);
}

// A RUN whose every command mapped: its rules, layers and report lines.
void Mapper::apply_run(RunParts& parts) {
  if (!parts.links.empty()) {
    Layer& ll = links_layer();
    ll.copies.insert(ll.copies.end(), parts.links.begin(), parts.links.end());
  }
  if (!parts.dirs.empty()) {
    Layer& dl = links_layer("dirs");
    dl.copies.insert(dl.copies.end(), parts.dirs.begin(), parts.dirs.end());
  }
  for (const auto& [name, value] : parts.exports) {
    add_env(name, value);
    left_out.push_back(std::to_string(m_cur->line) + ": echo \"export " + name + "=...\" >> .bashrc: " + name +
                       " is in config.env, which every process of the container sees, not only interactive shells");
  }
  commit_accounts(parts.accounts);
  if (parts.pips.empty() && parts.chmods.empty() && parts.harmless.empty() && parts.links.empty() &&
      parts.dirs.empty() && parts.exports.empty() && parts.accounts.users.empty() && parts.accounts.groups.empty()) {
    skip("RUN executes a command at build time; paddle-image runs nothing");
    return;
  }
  for (auto& p : parts.pips) {
    if (p.uninstall.empty()) {
      add_pip_layer(p);
    } else {
      add_uninstall_layer(p);
    }
  }
  for (auto h : parts.harmless) {
    std::replace(h.begin(), h.end(), '\n', ' ');
    left_out.push_back(std::to_string(m_cur->line) + ": " + util::redact_text(h));
  }
}

} // namespace templates::migrate
