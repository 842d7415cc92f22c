// The spec's YAML text, headed by the report: what is not mapped and why, what is left
// out, and the lock commands to run next.
#include "templates/migrate/mapper.hpp"

#include "templates/render.hpp"

#include <algorithm>
#include <iterator>

namespace templates::migrate {

namespace {

std::string q(const std::string& s) {
  return yaml_quote(s);
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "") + q(v[i]);
  }
  return out + "]";
}

// The apt repository of the base's distribution, as far as the FROM tells it: Debian's
// for a Debian base, else Ubuntu's (Paddle's images are Ubuntu's), with the release the
// tag names (22.04 when it names none, which the comment asks to check).
std::string debs_yaml(const std::string& base, const Layer& l) {
  struct Distro {
    const char* marker;
    const char* url;
    const char* suite;
    const char* components;
    const char* keyring;
  };
  static const Distro k_distros[] = {
      {"bookworm", "http://deb.debian.org/debian", "bookworm", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"bullseye", "http://deb.debian.org/debian", "bullseye", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"debian", "http://deb.debian.org/debian", "bookworm", "[main]",
       "/usr/share/keyrings/debian-archive-keyring.gpg"},
      {"20.04", "http://archive.ubuntu.com/ubuntu", "focal", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
      {"24.04", "http://archive.ubuntu.com/ubuntu", "noble", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
      {"22.04", "http://archive.ubuntu.com/ubuntu", "jammy", "[main, universe]",
       "/usr/share/keyrings/ubuntu-archive-keyring.gpg"},
  };
  const Distro* d = &k_distros[std::size(k_distros) - 1];
  bool named = false;
  for (const auto& x : k_distros) {
    if (base.find(x.marker) != std::string::npos) {
      d = &x;
      named = true;
      break;
    }
  }
  std::string y =
      "    # The base's distribution's repository" +
      std::string(named ? "" : " (assumed: Ubuntu 22.04; check the base's /etc/os-release)") +
      (l.recommends ? "; apt-get installed Recommends too, a debs layer does not: add those you need" : "") +
      "\n    debs:\n      packages: " + list(l.packages) + "\n      repositories:\n        - url: " + d->url +
      "\n          suite: " + d->suite + "\n          components: " + d->components +
      "\n          keyring: " + d->keyring + "\n      lock: debs.lock\n";
  return y;
}

// The accounts layer: groupadd's groups, then useradd's users, each field only where it
// is not the spec's default.
std::string accounts_yaml(const Layer& l) {
  std::string y = "    accounts:\n";
  if (!l.groups.empty()) {
    y += "      groups:\n";
    for (const auto& g : l.groups) {
      y += "        - {name: " + q(g.name) + ", gid: " + std::to_string(g.gid) + "}\n";
    }
  }
  if (!l.users.empty()) {
    y += "      users:\n";
  }
  for (const auto& u : l.users) {
    y += "        - name: " + q(u.name) + "\n          uid: " + std::to_string(u.uid) +
         (u.note.empty() ? "" : " # " + u.note) + "\n";
    if (u.gid) {
      y += "          gid: " + std::to_string(*u.gid) + "\n";
    }
    if (!u.home.empty()) {
      y += "          home: " + q(u.home) + "\n";
    }
    if (!u.create_home) {
      y += "          create_home: false # useradd without -m\n";
    }
    if (!u.shell.empty() && u.shell != "/bin/sh") {
      y += "          shell: " + q(u.shell) + "\n";
    }
    if (!u.comment.empty()) {
      y += "          comment: " + q(u.comment) + "\n";
    }
    if (!u.groups.empty()) {
      y += "          groups: " + list(u.groups) + "\n";
    }
  }
  return y;
}

// One copy rule of a files or data layer, as the spec writes it.
std::string copy_yaml(const Copy& c) {
  std::string y;
  if (!c.symlink.empty()) {
    y += "      - symlink: " + q(c.symlink) + "\n        to: " + q(c.to) + "\n";
  } else if (c.directory) {
    y += "      - directory: " + q(c.to) + "\n";
  } else if (!c.image.empty()) {
    y += "      - image: " + q(c.image) +
         " # pinned to its digest by paddle-image lock --sources\n        from: " + q(c.from) +
         "\n        to: " + q(c.to) + "\n";
  } else if (!c.git.empty()) {
    y += "      - git: " + q(c.git) + "\n" +
         (c.commit.empty() ? "        ref: " + q(c.ref) + " # pinned to its commit by paddle-image lock --sources\n"
                           : "        commit: " + q(c.commit) + "\n") +
         "        to: " + q(c.to) + "\n";
  } else if (!c.url.empty()) {
    y += "      - url: " + q(c.url) + "\n" +
         (c.sha256.empty() ? "        # sha256: pinned by paddle-image lock --sources\n"
                           : "        sha256: " + q(c.sha256) + "\n");
    if (c.extract) {
      y += "        extract: true\n";
    }
    if (c.strip_components > 0) {
      y += "        strip_components: " + std::to_string(c.strip_components) + "\n";
    }
    y += "        to: " + q(c.to) + "\n";
  } else {
    y += "      - from: " + q(c.from) + "\n        to: " + q(c.to) + "\n";
  }
  if (!c.owner.empty()) {
    y += "        owner: " + q(c.owner) + "\n";
  }
  if (c.from.rfind("../", 0) == 0) {
    y += "        allow_outside: true # the build context lies outside the spec's directory\n";
  }
  if (!c.mode.empty()) {
    y += "        mode: " + q(c.mode.size() < 4 ? std::string(4 - c.mode.size(), '0') + c.mode : c.mode) + "\n";
  }
  return y;
}

} // namespace

std::string emit(const Mapping& m, const std::vector<Unmapped>& unmapped, const std::string& file_name,
                 const std::vector<std::string>& commands, const std::vector<std::string>& left_out) {
  std::string y = "# Made by `paddle-image init --from-dockerfile " + file_name + "`. Reference: docs/spec.md.\n";
  if (!unmapped.empty()) {
    y += "# Not mapped (no spec equivalent; see docs/templates.md):\n";
    for (const auto& u : unmapped) {
      std::string t = u.instruction;
      std::replace(t.begin(), t.end(), '\n', ' ');
      y += "#   " + file_name + ":" + std::to_string(u.line) + ": " + t + "\n#     " + u.reason + "\n";
    }
  }
  if (!left_out.empty()) {
    y += "# Left out, as a spec needs nothing for them:\n";
    for (const auto& l : left_out) {
      y += "#   " + file_name + ":" + l + "\n";
    }
  }
  for (const auto& c : commands) {
    y += (c.rfind("paddle-image lock --sources", 0) == 0 ? "# Downloads, git refs and images are pinned (sha256, "
                                                           "commit, digest) in the sources lock; write it with\n#   "
          : c.rfind("paddle-image lock --spec ", 0) == 0
              ? "# The debs layer installs from a lock; write it with\n#   "
              : "# A requirements file is not a lock; write the lock with\n#   ") +
         c + "\n";
  }
  y += "base: " + q(m.base) + "\n";
  if (!m.platform.empty()) {
    y += "platform: " + q(m.platform) + "\n";
  }
  y += m.layers.empty() ? "layers: []\n" : "layers:\n";
  for (const auto& l : m.layers) {
    y += "  - name: " + q(l.name) + "\n";
    if (l.debs) {
      y += debs_yaml(m.base, l);
      continue;
    }
    if (l.accounts) {
      y += accounts_yaml(l);
      continue;
    }
    if (l.wheels && !l.uninstall.empty()) {
      y += "    wheels:\n      uninstall: " + list(l.uninstall) + " # pip uninstall: the base's copies removed\n";
      continue;
    }
    if (l.wheels) {
      y += "    wheels:\n      lock: " + q(l.lock) + "\n";
      if (l.indexes.size() == 1) {
        y += "      index: " + q(l.indexes[0]) + "\n";
      } else if (!l.indexes.empty()) {
        y += "      index: " + list(l.indexes) + "\n";
      }
      if (!l.find_links.empty()) {
        y += "      find_links: " + list(l.find_links) + "\n";
      }
      continue;
    }
    y += l.data ? "    data:\n" : "    files:\n";
    for (const auto& c : l.copies) {
      y += copy_yaml(c);
    }
  }
  std::string cfg;
  if (m.entrypoint) {
    cfg += "  entrypoint: " + list(*m.entrypoint) + "\n";
  }
  if (m.cmd) {
    cfg += "  cmd: " + list(*m.cmd) + "\n";
  }
  if (!m.env.empty()) {
    cfg += "  env:\n";
    for (const auto& [k, v] : m.env) {
      cfg += "    " + q(k) + ": " + q(v) + "\n"; // spec form: a literal '$' is "$$", the base's ${NAME}
    }
  }
  if (!m.workdir.empty()) {
    cfg += "  workdir: " + q(m.workdir) + "\n";
  }
  if (!m.user.empty()) {
    cfg += "  user: " + q(m.user) + "\n";
  }
  if (!m.labels.empty()) {
    cfg += "  labels:\n";
    for (const auto& [k, v] : m.labels) {
      cfg += "    " + q(k) + ": " + q(v) + "\n";
    }
  }
  if (!m.ports.empty()) {
    cfg += "  ports: " + list(m.ports) + "\n";
  }
  if (!m.stop_signal.empty()) {
    cfg += "  stop_signal: " + q(m.stop_signal) + "\n";
  }
  if (!cfg.empty()) {
    y += "config:\n" + cfg;
  }
  return y;
}

} // namespace templates::migrate
