// RUN wget/curl (then tar or unzip) and git clone: data layers of download rules and git
// sources, pinned by the sources lock.
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// `git clone URL [DIR] && cd DIR && git checkout COMMIT` (a full commit; `git -C DIR
// checkout` too): a git source of a files layer at DIR. False when the RUN is anything else.
bool Mapper::git_clone(const std::vector<std::vector<std::string>>& segs, const std::string& cwd) {
  if (segs.empty() || segs[0].size() < 3 || segs[0][0] != "git" || segs[0][1] != "clone") {
    return false;
  }
  std::vector<std::string> pos;
  std::string branch;
  for (std::size_t i = 2; i < segs[0].size(); ++i) {
    const std::string& a = segs[0][i];
    if ((a == "-b" || a == "--branch") && i + 1 < segs[0].size()) {
      branch = segs[0][++i];
    } else if (a.rfind("--branch=", 0) == 0) {
      branch = a.substr(9);
    } else if (a == "--depth") {
      ++i;
    } else if (a.rfind("--recurse", 0) == 0 || a == "--recursive") {
      return false; // submodules: a git source exports the repository's own tree only
    } else if (a.rfind("-", 0) != 0) {
      pos.push_back(a);
    }
  }
  bool git_url = pos.size() == 1 || pos.size() == 2;
  git_url = git_url && (pos[0].rfind("https://", 0) == 0 || pos[0].rfind("http://", 0) == 0);
  if (!git_url || util::redact_text(pos[0]) != pos[0]) {
    return false;
  }
  std::string name = pos[0].substr(pos[0].find_last_of('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0) {
    name.resize(name.size() - 4);
  }
  std::string dir = join_path(cwd, pos.size() == 2 ? pos[1] : name);
  std::string commit;
  std::size_t i = 1;
  if (i < segs.size() && segs[i].size() == 2 && segs[i][0] == "cd" && join_path(cwd, segs[i][1]) == dir) {
    ++i;
    if (i < segs.size() && segs[i].size() == 3 && segs[i][0] == "git" && segs[i][1] == "checkout") {
      commit = segs[i][2];
      ++i;
    }
  } else if (i < segs.size() && segs[i].size() == 5 && segs[i][0] == "git" && segs[i][1] == "-C" &&
             join_path(cwd, segs[i][2]) == dir && segs[i][3] == "checkout") {
    commit = segs[i][4];
    ++i;
  }
  while (i < segs.size() && segs[i].size() == 3 && segs[i][0] == "rm" && (segs[i][1] == "-rf" || segs[i][1] == "-fr") &&
         (join_path(cwd, segs[i][2]) == dir + "/.git" || segs[i][2] == ".git")) {
    ++i; // a git source has no .git
  }
  if (i != segs.size()) {
    return false;
  }
  bool full = commit.size() == 40 && util::is_lower_hex(commit);
  Layer l;
  l.name = layer_name(m, name.empty() ? "code" : name);
  Copy c;
  c.git = pos[0];
  if (full) {
    c.commit = commit;
  } else {
    c.ref = !commit.empty() ? commit : !branch.empty() ? branch : "HEAD";
    need_sources_lock();
  }
  c.to = dir;
  l.copies.push_back(c);
  m.layers.push_back(l);
  return true;
}

// The sources lock's command, once: a download or git ref is mapped without its pin.
void Mapper::need_sources_lock() {
  const std::string cmd = "paddle-image lock --sources --spec spec.yaml";
  if (std::find(m_lock_commands.begin(), m_lock_commands.end(), cmd) == m_lock_commands.end()) {
    m_lock_commands.push_back(cmd);
  }
}

// `wget [-q] [-O FILE | -P DIR] URL...` or `curl [-fsSL] (-o FILE | -O) URL`: the URLs
// with the paths they are saved to. False for an option that changes what is fetched
// or sent (a header, a POST, credentials), or output to stdout.
bool Mapper::fetch_command(const std::vector<std::string>& seg, const std::string& cwd,
                           std::vector<std::pair<std::string, std::string>>& out) {
  const bool wget = seg[0] == "wget";
  std::string file;
  std::string dir = cwd;
  bool remote_name = wget;
  std::vector<std::string> urls;
  for (std::size_t i = 1; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (a == flag && i + 1 < seg.size()) {
        return seg[++i];
      }
      if (flag.size() > 2 && a.rfind(flag + "=", 0) == 0) {
        return a.substr(flag.size() + 1);
      }
      return std::nullopt;
    };
    if (is_remote_source(a)) {
      urls.push_back(a);
    } else if (auto f = value(wget ? "-O" : "-o")) {
      file = *f;
    } else if (auto f2 = value(wget ? "--output-document" : "--output")) {
      file = *f2;
    } else if (auto d = wget ? value("-P") : std::nullopt) {
      dir = join_path(cwd, *d);
    } else if (auto d2 = wget ? value("--directory-prefix") : std::nullopt) {
      dir = join_path(cwd, *d2);
    } else if (value("--retry") || value("--tries") || value("-t") || value("--progress") || value("-C") ||
               value("--connect-timeout") || value("--max-time") || value("--timeout") || value("-T")) {
      continue;
    } else if (!wget && (a == "-O" || a == "--remote-name")) {
      remote_name = true;
    } else if (!wget && a.size() > 1 && a[0] == '-' && a[1] != '-' &&
               a.find_first_not_of("-fsSLkO#") == std::string::npos) {
      remote_name = remote_name || a.find('O') != std::string::npos; // -fsSLO
    } else if (a == "-q" || a == "-nv" || a == "--quiet" || a == "-c" || a == "--continue" ||
               a == "--no-check-certificate" || a == "--show-progress" || a == "--fail" || a == "--silent" ||
               a == "--show-error" || a == "--location" || a == "--insecure" || a == "--create-dirs" ||
               a == "--progress-bar" || a == "--no-verbose") {
      continue;
    } else {
      return false;
    }
  }
  if (urls.empty() || (!file.empty() && urls.size() != 1) || (file.empty() && !remote_name) || file == "-") {
    return false;
  }
  for (const auto& u : urls) {
    std::string path = u.substr(0, u.find_first_of("?#"));
    std::string name = path.substr(path.rfind('/') + 1);
    if (file.empty() && name.empty()) {
      return false;
    }
    out.emplace_back(u, file.empty() ? join_path(dir, name) : join_path(cwd, file));
  }
  return true;
}

// `tar -x[z|j|J]f FILE [-C DIR] [--strip-components=N]` or `unzip [-q] [-o] FILE [-d
// DIR]` of FILE: where it unpacks and how much it strips. False for anything else.
bool Mapper::unpack_command(const std::vector<std::string>& seg, const std::string& cwd, std::string& file,
                            std::string& into, int& strip) {
  into = cwd;
  strip = 0;
  file.clear();
  bool extract = seg[0] == "unzip";
  for (std::size_t i = 1; i < seg.size(); ++i) {
    const std::string& a = seg[i];
    if (seg[0] == "unzip") {
      if (a == "-d" && i + 1 < seg.size()) {
        into = join_path(cwd, seg[++i]);
      } else if (a == "-q" || a == "-o" || a == "-qo" || a == "-oq") {
        continue;
      } else if (a[0] != '-' && file.empty()) {
        file = join_path(cwd, a);
      } else {
        return false;
      }
      continue;
    }
    if ((a == "-C" || a == "--directory") && i + 1 < seg.size()) {
      into = join_path(cwd, seg[++i]);
    } else if (a.rfind("--strip-components=", 0) == 0) {
      std::string n = a.substr(19);
      if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos) {
        return false;
      }
      strip = std::stoi(n);
    } else if ((a == "-f" || a == "--file") && i + 1 < seg.size()) {
      file = join_path(cwd, seg[++i]);
    } else if (a == "--no-same-owner" || a == "-v" || a == "--gzip" || a == "-z" || a == "-x" || a == "--extract") {
      extract = extract || a == "-x" || a == "--extract";
    } else if (a.find_first_not_of("-xzjJvfoa") == std::string::npos && a.find('x') != std::string::npos) {
      extract = true; // -xzf, xvf: with f last, the file follows
      if (a.back() == 'f' && i + 1 < seg.size()) {
        file = join_path(cwd, seg[++i]);
      }
    } else {
      return false;
    }
  }
  return extract && !file.empty();
}

// A RUN of downloads: wget/curl of files, each then unpacked (tar, unzip) and removed,
// with `mkdir`/`cd` around them: a data layer of download rules, pinned by the sources
// lock. False (nothing mapped) when the RUN does anything else.
bool Mapper::download_run(const std::vector<std::vector<std::string>>& segs, std::string cwd) {
  struct Fetched {
    std::string url, path;
    bool extracted = false, removed = false;
    std::string into;
    int strip = 0;
  };
  std::vector<Fetched> got;
  auto find = [&](const std::string& path) -> Fetched* {
    for (auto& f : got) {
      if (f.path == path) {
        return &f;
      }
    }
    return nullptr;
  };
  for (const auto& seg : segs) {
    if (seg.empty()) {
      continue;
    }
    const std::string& c = seg[0];
    if (c == "cd" && seg.size() == 2) {
      cwd = join_path(cwd, seg[1]);
    } else if (c == "mkdir") {
      continue; // a rule makes the directories above what it lays out
    } else if (c == "wget" || c == "curl") {
      std::vector<std::pair<std::string, std::string>> out;
      if (!fetch_command(seg, cwd, out)) {
        return false;
      }
      for (auto& [u, p] : out) {
        Fetched f;
        f.url = u;
        f.path = p;
        got.push_back(f);
      }
    } else if (c == "tar" || c == "unzip") {
      Fetched unpack;
      if (!unpack_command(seg, cwd, unpack.path, unpack.into, unpack.strip)) {
        return false;
      }
      Fetched* f = find(unpack.path);
      if (f == nullptr || f->extracted) {
        return false;
      }
      f->extracted = true;
      f->into = unpack.into;
      f->strip = unpack.strip;
    } else if (c == "rm") {
      for (std::size_t i = 1; i < seg.size(); ++i) {
        if (seg[i][0] == '-') {
          continue;
        }
        Fetched* f = find(join_path(cwd, seg[i]));
        if (f == nullptr) {
          return false;
        }
        f->removed = true;
      }
    } else {
      return false;
    }
  }
  if (got.empty()) {
    return false;
  }
  for (const auto& f : got) {
    if (util::redact_text(f.url) != f.url) {
      skip("downloads a URL with credentials: put them in ~/.netrc and add the download as a rule with url:");
      return true;
    }
  }
  Layer l;
  l.data = true;
  std::string first = got[0].path.substr(got[0].path.rfind('/') + 1);
  l.name = layer_name(m, first.substr(0, first.find('.')).empty() ? "download" : first.substr(0, first.find('.')));
  for (const auto& f : got) {
    Copy c;
    c.url = f.url;
    if (f.extracted) {
      c.extract = true;
      c.strip_components = f.strip;
      c.to = f.into.empty() || f.into.back() == '/' ? f.into : f.into + "/";
      l.copies.push_back(c);
    }
    if (!f.removed || !f.extracted) { // the file itself stays in the image too
      Copy plain;
      plain.url = f.url;
      plain.to = f.path;
      l.copies.push_back(plain);
    }
  }
  m.layers.push_back(l);
  need_sources_lock();
  return true;
}

} // namespace templates::migrate
