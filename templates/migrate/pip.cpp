// RUN pip install: a wheels layer per install, its requirements file followed back to the
// project (or written beside the spec for named packages), with the lock command.
#include "templates/migrate/mapper.hpp"

#include "spec/spec.hpp"
#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

// Where the pip of a command starts: after `pip`, `pip3`, `pip3.X`, `python[3[.X]] -m
// pip`; npos when the command is not pip's.
std::size_t Mapper::pip_start(const std::vector<std::string>& seg) {
  auto python = [](const std::string& c) {
    return c == "python" || c == "python3" || (c.rfind("python3.", 0) == 0 && c.size() > 8) ||
           c.rfind("/usr/bin/python", 0) == 0 || c.rfind("/usr/local/bin/python", 0) == 0;
  };
  const std::string& c = seg[0];
  if (c == "pip" || c == "pip3" || (c.rfind("pip3.", 0) == 0 && c.size() > 5) ||
      c.rfind("/usr/local/bin/pip", 0) == 0 || c.rfind("/usr/bin/pip", 0) == 0) {
    return 1;
  }
  if (python(c) && seg.size() >= 3 && seg[1] == "-m" && seg[2] == "pip") {
    return 3;
  }
  return std::string::npos;
}

// Why a `pip install` argument is not one requirement, the line of a requirements file
// it becomes: a line break or another control byte (a second line: an option such as
// --index-url, smuggled in a quoted argument), a comment, or an option after it
// (a blank, then '#' or '-': pip reads those as a comment and as per-requirement
// options); then the caller's PEP 508 check.
std::optional<std::string> Mapper::not_one_requirement(const std::string& a) const {
  auto shown = [&] {
    std::string t;
    for (unsigned char ch : a.substr(0, 80)) {
      t += ch < 0x20 || ch == 0x7f ? '?' : static_cast<char>(ch);
    }
    return "`" + t + (a.size() > 80 ? "...`" : "`");
  };
  const std::string fix = ": give pip install one requirement per argument (NAME, NAME==VERSION, NAME>=LOW, "
                          "NAME[EXTRA], NAME; MARKER), options as arguments of their own";
  for (std::size_t k = 0; k < a.size(); ++k) {
    auto ch = static_cast<unsigned char>(a[k]);
    if (ch < 0x20 || ch == 0x7f) {
      return shown() +
             " holds a control character (a line break would start another line of the requirements "
             "file)" +
             fix;
    }
    if (ch == ' ' && k + 1 < a.size() && (a[k + 1] == '#' || a[k + 1] == '-')) { // a tab: a control byte
      return shown() + " is more than a requirement (pip reads the part from `" + std::string(1, a[k + 1]) +
             "` on as " + (a[k + 1] == '#' ? "a comment" : "options") + ")" + fix;
    }
  }
  if (a.empty() || a[0] == '#') {
    return shown() + " is not a requirement" + fix;
  }
  if (m_requirement_error) {
    if (auto why = m_requirement_error(a)) {
      return shown() + " is not a requirement (PEP 508): " + *why + fix;
    }
  }
  return std::nullopt;
}

// `pip install ...` from w[i] on; an error message for what it cannot map.
std::optional<std::string> Mapper::parse_pip_install(const std::vector<std::string>& w, std::size_t i,
                                                     const std::string& cwd, PipInstall& p) {
  for (; i < w.size(); ++i) {
    const std::string& a = w[i];
    auto value = [&](const std::string& flag) -> std::optional<std::string> {
      if (a == flag && i + 1 < w.size()) {
        return w[++i];
      }
      if (flag.rfind("--", 0) == 0 && a.rfind(flag + "=", 0) == 0) {
        return a.substr(flag.size() + 1);
      }
      if (flag.size() == 2 && a.size() > 2 && a.rfind(flag, 0) == 0) {
        return a.substr(2); // -rrequirements.txt
      }
      return std::nullopt;
    };
    if (auto v = value("-r")) {
      p.reqs.push_back(join_path(cwd, *v));
    } else if (auto v2 = value("--requirement")) {
      p.reqs.push_back(join_path(cwd, *v2));
    } else if (auto v3 = value("-i")) {
      p.indexes.insert(p.indexes.begin(), *v3);
    } else if (auto v4 = value("--index-url")) {
      p.indexes.insert(p.indexes.begin(), *v4);
    } else if (auto v5 = value("--extra-index-url")) {
      p.indexes.push_back(*v5);
    } else if (auto v6 = value("-f")) {
      p.find_links.push_back(*v6);
    } else if (auto v7 = value("--find-links")) {
      p.find_links.push_back(*v7);
    } else if (auto v8 = value("--trusted-host")) {
      continue; // TLS is the build host's: --insecure-registry / --ca-file
    } else if (a == "--upgrade" || a == "-U") {
      p.upgrade = true;
    } else if (a == "--no-cache-dir" || a == "-q" || a == "--quiet" || a == "-qq" ||
               a == "--disable-pip-version-check" || a == "--no-compile" || a == "--user" ||
               a == "--break-system-packages" || a == "--ignore-installed" || a == "--no-warn-script-location" ||
               a == "--root-user-action=ignore" || a == "--progress-bar=off") {
      continue;
    } else if (a == "-e" || a == "--editable" || a == "." || a.rfind("./", 0) == 0 || a.rfind("/", 0) == 0 ||
               a.rfind("git+", 0) == 0) {
      return "`" + a +
             "` installs a local project or a VCS checkout: build its wheel outside (pip wheel) and "
             "install the wheel with a wheels layer (dir:)";
    } else if (a.rfind("http://", 0) == 0 || a.rfind("https://", 0) == 0) {
      return "`" + a +
             "` installs a wheel by URL: download it into a directory of the project and install it with a "
             "wheels layer (dir:), or name the project and its index";
    } else if (!a.empty() && a[0] == '-') {
      return "`" + a + "` in a pip install has no spec equivalent";
    } else if (auto why = not_one_requirement(a)) {
      return *why;
    } else {
      p.names.push_back(a);
    }
  }
  return std::nullopt;
}

// The -r files of a pip install as the spec's paths (the files the lock reads), each
// followed back through the COPY that put it there; false (and why, listed) when one
// does not come from the project.
bool Mapper::requirement_sources(const PipInstall& p, std::vector<std::string>& sources) {
  for (const auto& r : p.reqs) {
    const Copy* remote = nullptr;
    auto src = copied_from(r, &remote);
    if (!src && remote != nullptr) {
      skip("-r " + r + ": the file comes from " + (remote->git.empty() ? remote->url : remote->git) +
           ", not from the project: a lock is made from a file here; put a copy of it in the project and map "
           "it to a wheels layer");
      return false;
    }
    if (!src) {
      skip("-r " + r +
           ": no COPY before this RUN puts a file there; copy the requirements file from the "
           "project first (a files layer), then this maps to a wheels layer");
      return false;
    }
    sources.push_back(*src);
  }
  return true;
}

// `pip uninstall -y NAME...` from w[i] on: the names into p.uninstall; an error message
// for what it cannot map (-r FILE, a name with a version, no -y: pip would ask).
std::optional<std::string> Mapper::parse_pip_uninstall(const std::vector<std::string>& w, std::size_t i,
                                                       PipInstall& p) {
  bool yes = false;
  for (; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a == "-y" || a == "--yes") {
      yes = true;
    } else if (a == "-q" || a == "--quiet" || a == "-qq" || a == "--no-cache-dir" ||
               a == "--disable-pip-version-check" || a == "--break-system-packages" ||
               a == "--root-user-action=ignore") {
      continue;
    } else if (a == "-r" || a.rfind("--requirement", 0) == 0 || a.rfind("-r", 0) == 0) {
      return "`pip uninstall -r FILE`: name the projects (wheels.uninstall: [NAME, ...] takes names only)";
    } else if (!a.empty() && a[0] == '-') {
      return "`" + a + "` in a pip uninstall has no spec equivalent";
    } else if (!spec::is_project_name(a)) { // what wheels.uninstall will take
      return "`" + util::redact_text(a) + "` is not a project name: pip uninstall takes names only";
    } else {
      p.uninstall.push_back(a);
    }
  }
  if (p.uninstall.empty()) {
    return "pip uninstall with nothing to uninstall";
  }
  if (!yes) {
    return "pip uninstall without -y asks for confirmation, which a docker build cannot give: the build fails "
           "there; add -y, and this maps to a wheels layer with uninstall: [" +
           util::join(p.uninstall, ", ") + "]";
  }
  return std::nullopt;
}

// A wheels layer that uninstalls (pip uninstall -y NAME...): the base's distributions
// whited out at build time; a name the base does not have fails the build.
void Mapper::add_uninstall_layer(const PipInstall& p) {
  Layer l;
  l.wheels = true;
  l.name = layer_name(m, "uninstall");
  l.uninstall = p.uninstall;
  m.layers.push_back(l);
}

// A wheels layer for one pip install: its one -r file, or a requirements input beside
// the spec holding its named packages and -r files, which `lock` resolves.
void Mapper::add_pip_layer(PipInstall& p) {
  Layer l;
  l.wheels = true;
  l.indexes = p.indexes;
  l.find_links = p.find_links;
  std::vector<std::string> with_credentials;
  for (auto* urls : {&l.indexes, &l.find_links}) {
    for (auto& u : *urls) {
      if (auto parsed = util::parse_url(u); parsed && !parsed->userinfo.empty()) {
        with_credentials.push_back(parsed->authority());
        u = util::without_userinfo(u);
      }
    }
  }
  if (!with_credentials.empty()) {
    skip("the credentials in the URL for " + util::join(with_credentials, ", ") +
         " are not copied into the spec: put them in ~/.netrc (machine HOST login USER password PASS) or "
         "PIP_INDEX_URL where paddle-image runs");
  }
  std::vector<std::string> sources;
  if (!requirement_sources(p, sources)) {
    return;
  }
  l.name = layer_name(m, "deps");
  std::string req;
  const bool generated = sources.size() != 1 || !p.names.empty();
  if (!generated) {
    req = sources[0]; // the project's own file is the lock's input
  } else {
    // Named packages (pinned or not, ranges and extras as pip reads them) and the -r
    // files, in one requirements input beside the spec: `lock` resolves it for the base.
    req = "requirements-" + l.name + ".txt";
    std::string text = "# From " + m_file + ":" + std::to_string(m_cur->line) +
                       " (pip install). paddle-image lock resolves these for the base image (names, ranges,\n"
                       "# extras and markers as pip reads them) into " +
                       req.substr(0, req.size() - 4) + ".lock; edit this file, not the lock.\n";
    for (const auto& s : sources) {
      text += "-r " + s + "\n";
    }
    for (const auto& n : p.names) {
      text += n + "\n";
    }
    files.emplace_back(req, text);
  }
  if (p.upgrade) {
    left_out.push_back(std::to_string(m_cur->line) +
                       ": pip's --upgrade (the lock takes the newest versions that fit; the base's copy where it "
                       "already meets a requirement)");
  }
  for (const auto& earlier : m.layers) {
    if (earlier.wheels && earlier.lock == req + ".lock") {
      skip("installs " + req + " again: wheels layer " + earlier.name +
           " already installs it (one lock per requirements file)");
      return;
    }
  }
  l.lock = (generated ? req.substr(0, req.size() - 4) : req) + ".lock";
  m.layers.push_back(l);
  m_lock_commands.push_back("paddle-image lock " + req + " -o " + l.lock + " --spec spec.yaml --layer " + l.name);
}

// One command of a RUN that is neither of the simple ones: pip (install: `pips`; a
// self-upgrade or cache purge: `harmless`). False once skip() has said why the RUN
// does not map.
bool Mapper::pip_segment(const std::vector<std::string>& seg, const std::string& cwd, std::vector<PipInstall>& pips,
                         std::vector<std::string>& harmless) {
  std::size_t i = pip_start(seg);
  if (i == std::string::npos) {
    skip(command_hint(seg));
    return false;
  }
  if (i < seg.size() && seg[i] == "cache") {
    harmless.push_back(util::join(seg, " "));
    return true;
  }
  if (i < seg.size() && seg[i] == "uninstall") {
    PipInstall u;
    if (auto why = parse_pip_uninstall(seg, i + 1, u)) {
      skip(*why);
      return false;
    }
    pips.push_back(u);
    return true;
  }
  if (i >= seg.size() || seg[i] != "install") {
    skip("`pip " + (i < seg.size() ? seg[i] : std::string()) +
         "` has no spec equivalent (only pip install and pip uninstall map)");
    return false;
  }
  PipInstall p;
  if (auto why = parse_pip_install(seg, i + 1, cwd, p)) {
    skip(*why);
    return false;
  }
  bool self_upgrade =
      p.reqs.empty() && !p.names.empty() && std::all_of(p.names.begin(), p.names.end(), [](const std::string& n) {
        std::string base = util::ascii_lower(n.substr(0, n.find_first_of("=<>!~")));
        return base == "pip" || base == "setuptools" || base == "wheel";
      });
  if (self_upgrade) {
    harmless.push_back(util::join(seg, " ") + " (the tools that install, which the image does not need)");
    return true;
  }
  if (p.reqs.empty() && p.names.empty()) {
    skip("pip install with nothing to install");
    return false;
  }
  pips.push_back(p);
  return true;
}

} // namespace templates::migrate
