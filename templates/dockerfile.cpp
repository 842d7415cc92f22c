#include "templates/dockerfile.hpp"

#include "spec/env_value.hpp"
#include "templates/render.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates {

using util::Error;
using util::ErrorKind;

namespace {

// A value that goes into a Dockerfile line as it is (comments, instruction words).
// Line breaks of any kind (also U+0085, U+2028 and U+2029, which editors and viewers
// show as new lines) and other control characters are refused.
std::string one_line(const std::string& v, const std::string& what) {
  bool control = std::any_of(v.begin(), v.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7f;
  });
  bool unicode_break = v.find("\xc2\x85") != std::string::npos || v.find("\xe2\x80\xa8") != std::string::npos ||
                       v.find("\xe2\x80\xa9") != std::string::npos;
  if (control || unicode_break) {
    throw Error(ErrorKind::input,
                what + " '" + util::escape_bytes(v) +
                    "' has a line break or control character, which a Dockerfile line cannot hold",
                "remove it from the spec");
  }
  return v;
}

// A COPY argument (JSON form). BuildKit and buildah still run each one through their
// word processing (variables, quotes, backslash escapes), so a path with '$', a quote
// or a backslash cannot be named literally; neither can a source with a glob character.
std::string json_word(const std::string& v, const std::string& what, bool source = false) {
  one_line(v, what);
  auto refuse = [&](const std::string& why) {
    throw Error(ErrorKind::input, what + " '" + util::escape_bytes(v) + "' has " + why,
                "rename the path, or copy it with paddle-image build only");
  };
  if (v.find('$') != std::string::npos) {
    refuse("a '$', which a Dockerfile would expand as a variable");
  }
  if (v.find_first_of("'\"\\") != std::string::npos) {
    refuse("a quote or backslash, which BuildKit and buildah process in COPY arguments");
  }
  if (source && v.find_first_of("*?[") != std::string::npos) {
    refuse("a glob character (* ? [), which COPY takes as a pattern");
  }
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_array(const std::vector<std::string>& v) {
  std::vector<std::string> words;
  for (const auto& w : v) {
    words.push_back(nlohmann::json(w).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return "[" + util::join(words, ", ") + "]";
}

std::string octal(std::uint32_t mode) {
  std::string out;
  for (int shift = 9; shift >= 0; shift -= 3) {
    out += static_cast<char>('0' + ((mode >> shift) & 7u));
  }
  return out;
}

std::string safe_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out;
}

bool is_url(const std::string& s) {
  return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0;
}

std::string from_line(const DockerfileInput& in) {
  const std::string& b = in.base;
  if (b.rfind("oci:", 0) == 0) {
    throw Error(ErrorKind::input, "base '" + b + "' is a local OCI layout, which a Dockerfile cannot name in FROM",
                "push it to a registry (paddle-image push " + b +
                    " REGISTRY/REPO:TAG) and write that reference as the spec's base, then render again");
  }
  if (b == "auto") {
    throw Error(ErrorKind::input,
                "base 'auto' is chosen by the compatibility matrix at build time; a Dockerfile needs "
                "a fixed FROM",
                "run `paddle-image resolve` with the spec's resolve: constraints and write the chosen reference as "
                "the spec's base");
  }
  std::string ref = b.rfind("docker://", 0) == 0 ? b.substr(9) : b;
  return one_line(ref, "base");
}

nlohmann::json text_list(const std::vector<std::string>& lines, const char* key) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& l : lines) {
    a.push_back({{key, l}});
  }
  return a;
}

// A download (url:): ADD --checksum, and for an archive, tar in the base unpacks it.
void download(const DockerLayer& l, const DockerCopy& rule, std::vector<std::string>& lines,
              std::vector<std::string>& notes) {
  const DockerDownload& c = rule.download;
  std::string chown = rule.chown.empty() ? l.chown : rule.chown;
  const std::string unpinned = ": not pinned yet (paddle-image lock --sources writes its pin to the sources lock)";
  if (c.git) {
    // BuildKit's ADD of a git repository at a ref, without .git.
    const std::string at = c.git_commit.empty() ? c.git_ref : c.git_commit;
    lines.push_back("ADD" + (chown.empty() ? std::string() : " --chown=" + one_line(chown, "owner")) + " [" +
                    json_word(c.url + "#" + at, "git") + ", " + json_word(rule.to, "to") + "]");
    if (c.git_commit.empty()) {
      notes.push_back(c.url + " at " + c.git_ref + unpinned);
    }
    if (c.strip_components > 0 || !c.include.empty()) {
      notes.push_back(c.url + ": ADD copies the whole tree; the spec keeps only part of it (strip_components, "
                              "include)");
    }
    return;
  }
  std::string flags = c.sha256.empty() ? std::string() : " --checksum=sha256:" + one_line(c.sha256, "sha256");
  if (c.sha256.empty()) {
    notes.push_back(c.url + unpinned);
  }
  if (!chown.empty()) {
    flags += " --chown=" + one_line(chown, "owner");
  }
  if (!c.extract) {
    if (rule.mode) {
      flags += " --chmod=" + octal(*rule.mode);
    }
    lines.push_back("ADD" + flags + " [" + json_word(c.url, "url") + ", " + json_word(rule.to, "to") + "]");
    return;
  }
  std::string tmp =
      "/tmp/paddle-image/" + safe_name(l.name) + "/" + safe_name(c.filename.empty() ? "archive" : c.filename);
  lines.push_back("ADD" + flags + " [" + json_word(c.url, "url") + ", " + json_word(tmp, "to") + "]");
  std::string run = "RUN mkdir -p " + util::shell_quote(one_line(rule.to, "to")) + " && tar -xf " +
                    util::shell_quote(tmp) + " -C " + util::shell_quote(rule.to) + " --no-same-owner";
  if (c.strip_components > 0) {
    run += " --strip-components=" + std::to_string(c.strip_components);
  }
  if (!c.include.empty()) {
    run += " --wildcards";
    for (const auto& i : c.include) {
      run += " " + util::shell_quote(one_line(i, "include pattern"));
    }
  }
  lines.push_back(run + " && rm -f " + util::shell_quote(tmp));
  notes.push_back(c.url +
                  " is unpacked by the base's tar (a zip needs unzip instead; paddle-image refuses members "
                  "that point outside " +
                  rule.to + ", tar only warns)");
}

void files_layer(const DockerLayer& l, std::vector<std::string>& lines, std::vector<std::string>& notes,
                 std::vector<std::string>& mode_diffs) {
  for (const auto& c : l.copies) {
    if (!c.download.url.empty()) {
      download(l, c, lines, notes);
      continue;
    }
    if (c.symlink) {
      // The link itself: ln in the base (which every Debian and Ubuntu base has).
      const std::string link = one_line(c.to, "to");
      const std::string parent = link.substr(0, link.find_last_of('/'));
      std::string run = "RUN " + (parent.empty() ? std::string() : "mkdir -p " + util::shell_quote(parent) + " && ") +
                        "ln -sfn " + util::shell_quote(one_line(*c.symlink, "symlink")) + " " + util::shell_quote(link);
      std::string chown = c.chown.empty() ? l.chown : c.chown;
      if (!chown.empty()) {
        run += " && chown -h " + util::shell_quote(one_line(chown, "owner")) + " " + util::shell_quote(link);
      }
      lines.push_back(run);
      continue;
    }
    if (c.directory) {
      // The directory itself: mkdir in the base, then the rule's mode and owner.
      const std::string dir = util::shell_quote(one_line(c.to, "directory"));
      std::string run = "RUN mkdir -p " + dir + " && chmod " + octal(c.dir_mode.value_or(0755u)) + " " + dir;
      std::string chown = c.chown.empty() ? l.chown : c.chown;
      if (!chown.empty()) {
        run += " && chown " + util::shell_quote(one_line(chown, "owner")) + " " + dir;
      }
      lines.push_back(run);
      continue;
    }
    std::string line = "COPY";
    std::string chown = c.chown.empty() ? l.chown : c.chown;
    if (!chown.empty()) {
      line += " --chown=" + one_line(chown, "owner");
    }
    // COPY --chmod sets directories as well as files (BuildKit, buildah); paddle-image
    // gives `mode` to files only and keeps directories at dir_mode (0755 by default).
    // So --chmod is written only where it gives the same result: a single file, or a
    // directory whose directories paddle-image would give that same mode.
    bool directory = !c.from.empty() && c.from.back() == '/';
    if (c.mode && (!directory || *c.mode == c.dir_mode.value_or(0755u))) {
      line += " --chmod=" + octal(*c.mode);
    } else if (c.mode) {
      notes.push_back("mode " + octal(*c.mode) + " of " + c.from +
                      " is not applied: COPY --chmod would give it to "
                      "the directories too (paddle-image keeps them " +
                      octal(c.dir_mode.value_or(0755u)) + "); the files keep their modes from the build context");
      mode_diffs.push_back(c.from);
    }
    line += " [" + json_word(c.from, "from", true) + ", " + json_word(c.to, "to") + "]";
    lines.push_back(line);
    if (!c.exclude.empty()) {
      std::vector<std::string> ex;
      for (const auto& e : c.exclude) {
        ex.push_back(one_line(e, "exclude pattern"));
      }
      notes.push_back("excluded from " + c.from + " by the spec (add to .dockerignore): " + util::join(ex, ", "));
    }
    if (c.dir_mode && !(c.mode && *c.mode == *c.dir_mode)) {
      notes.push_back("dir_mode " + octal(*c.dir_mode) + " of " + c.from +
                      " has no COPY flag (--chmod sets files and directories alike)");
      mode_diffs.push_back(c.from);
    }
    if (c.outside_context) {
      notes.push_back(c.from + " lies outside the spec's directory (allow_outside): it is not in the build context");
    }
  }
}

void wheels_layer(const DockerfileInput& in, const DockerLayer& l, std::vector<std::string>& lines,
                  std::vector<std::string>& notes) {
  std::string tmp = "/tmp/paddle-image/" + safe_name(l.name);
  // PIP_BREAK_SYSTEM_PACKAGES: on a base whose Python is marked externally managed
  // (PEP 668: Debian 12, Ubuntu 23.04 and later) pip refuses to install without it,
  // while paddle-image build installs into site-packages all the same. An environment
  // variable, not --break-system-packages, so a pip older than 23.0.1 is not refused.
  std::string pip =
      "PIP_BREAK_SYSTEM_PACKAGES=1 " + util::shell_quote(one_line(in.python, "python.interpreter")) + " -m pip install";
  if (!l.uninstall.empty()) {
    std::string names;
    for (const auto& n : l.uninstall) {
      names += " " + util::shell_quote(one_line(n, "uninstall"));
    }
    lines.push_back("RUN PIP_BREAK_SYSTEM_PACKAGES=1 " + util::shell_quote(one_line(in.python, "python.interpreter")) +
                    " -m pip uninstall -y" + names);
    return;
  }
  std::string lock_in_image = tmp + ".lock";
  if (!l.lock.empty()) {
    lines.push_back("COPY [" + json_word(l.lock, "lock", true) + ", " + json_word(lock_in_image, "lock") + "]");
  }
  if (!l.wheel_dir.empty()) {
    lines.push_back("COPY [" + json_word(l.wheel_dir, "wheels dir", true) + ", " + json_word(tmp + "/", "wheels dir") +
                    "]");
    if (l.lock.empty()) {
      lines.push_back("RUN " + pip + " --no-deps --no-index " + util::shell_quote(tmp) + "/*.whl");
    } else {
      lines.push_back("RUN " + pip + " --no-deps --no-index --find-links " + util::shell_quote(tmp + "/") +
                      " --require-hashes -r " + util::shell_quote(lock_in_image));
    }
  } else {
    // Credentials in a URL never reach the Dockerfile (nor an image history built from
    // it): the URL is written without them and pip reads them from a BuildKit secret
    // mounted as root's netrc.
    std::vector<std::string> credentialed;
    auto clean = [&](const std::string& u) {
      auto parsed = util::parse_url(u);
      if (parsed && !parsed->userinfo.empty()) {
        credentialed.push_back(parsed->host);
        return util::without_userinfo(u);
      }
      return u;
    };
    std::string args;
    for (std::size_t i = 0; i < l.indexes.size(); ++i) {
      args += (i == 0 ? " -i " : " --extra-index-url ") + util::shell_quote(one_line(clean(l.indexes[i]), "index"));
    }
    for (const auto& f : l.find_links) {
      if (is_url(f)) {
        args += " -f " + util::shell_quote(one_line(clean(f), "find_links"));
      } else {
        notes.push_back("find_links " + one_line(f, "find_links") +
                        " is a local directory: COPY it in and add -f DIR to the pip line");
      }
    }
    if (l.indexes.empty()) {
      notes.push_back("no index in the spec: pip uses the lock's -i lines, then PIP_INDEX_URL / pip.conf, then PyPI");
    }
    std::string mount;
    if (!credentialed.empty()) {
      mount = "--mount=type=secret,id=netrc,target=/root/.netrc ";
      notes.push_back("the credentials for " + util::join(credentialed, ", ") +
                      " are not written here: build with --secret id=netrc,src=FILE, FILE a netrc file with a "
                      "`machine HOST login USER password PASSWORD` line for each (pip reads /root/.netrc)");
    }
    lines.push_back("RUN " + mount + pip + " --require-hashes -r " + util::shell_quote(lock_in_image) + args);
  }
  if (!l.chown.empty()) {
    notes.push_back("owner " + l.chown + ": pip installs as the build's user (root), not as the layer's owner");
  }
}

void add_config(const DockerConfig& c, nlohmann::json& d) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : c.env) {
    if (k.empty() || k.find_first_of(" \t\r\n\"'$=\\") != std::string::npos) {
      throw Error(ErrorKind::input,
                  "config.env name '" + util::escape_bytes(k) + "' cannot be written in a Dockerfile ENV",
                  "use letters, digits and '_' in variable names");
    }
    dockerfile_quote(v); // refuses line breaks before rendering
    // Quoted here, not by the template: a reference ($PATH) stays one for Docker to expand.
    env.push_back({{"name", k}, {"value", spec::EnvValue::parse(v).dockerfile_quoted()}});
  }
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& [k, v] : c.labels) {
    dockerfile_quote(k);
    dockerfile_quote(v);
    labels.push_back({{"key", k}, {"value", v}});
  }
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : c.ports) {
    ports.push_back({{"port", one_line(p, "port")}});
  }
  d["env"] = env;
  d["labels"] = labels;
  d["ports"] = ports;
  d["workdir"] = c.workdir.empty() ? nlohmann::json(false) : nlohmann::json(one_line(c.workdir, "workdir"));
  d["user"] = c.user.empty() ? nlohmann::json(false) : nlohmann::json(one_line(c.user, "user"));
  d["stop_signal"] =
      c.stop_signal.empty() ? nlohmann::json(false) : nlohmann::json(one_line(c.stop_signal, "stop_signal"));
  d["entrypoint"] = c.entrypoint ? nlohmann::json(json_array(*c.entrypoint)) : nlohmann::json(false);
  d["cmd"] = c.cmd ? nlohmann::json(json_array(*c.cmd)) : nlohmann::json(false);
  d["has_config"] = !env.empty() || !labels.empty() || !ports.empty() || !c.workdir.empty() || !c.user.empty() ||
                    !c.stop_signal.empty() || c.entrypoint.has_value() || c.cmd.has_value();
}

} // namespace

nlohmann::json dockerfile_data(const DockerfileInput& in) {
  nlohmann::json d;
  d["spec_file"] = one_line(in.spec_file, "spec file");
  d["from"] = from_line(in);
  d["platform_flag"] = in.platform.empty() || in.platform == "linux/amd64" ? "" : "--platform=" + in.platform + " ";
  bool wheels = false;
  bool excludes = in.custom_ignore;
  std::vector<std::string> mode_diffs;
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t i = 0; i < in.layers.size(); ++i) {
    const DockerLayer& l = in.layers[i];
    std::vector<std::string> lines;
    std::vector<std::string> notes;
    if (l.kind == "wheels") {
      wheels = true;
      wheels_layer(in, l, lines, notes);
    } else if (l.kind == "accounts") {
      lines.push_back("RUN " + one_line(util::join(l.accounts, " && "), "accounts"));
      notes.push_back("useradd dates each shadow entry with the day of the build; paddle-image leaves that field "
                      "empty, so the bytes do not depend on the day");
    } else if (l.kind == "debs") {
      // The spec checked the names (letters, digits, + . - and =VERSION): shell-safe.
      lines.push_back("RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                      "--no-install-recommends " +
                      util::join(l.debs, " ") + " && rm -rf /var/lib/apt/lists/*");
      notes.push_back("apt resolves against the repository's index of the day, not the layer's lock, and runs the "
                      "packages' maintainer scripts");
    } else {
      files_layer(l, lines, notes, mode_diffs);
      for (const auto& c : l.copies) {
        excludes = excludes || !c.exclude.empty();
      }
    }
    layers.push_back({{"index", std::to_string(i + 1)},
                      {"name", one_line(l.name, "layer name")},
                      {"kind", l.kind},
                      {"notes", text_list(notes, "text")},
                      {"instructions", text_list(lines, "line")}});
  }
  d["layers"] = layers;
  std::vector<std::string> diffs;
  if (wheels) {
    diffs.push_back("pip compiles .pyc files and writes INSTALLER=pip into each .dist-info; paddle-image writes no "
                    ".pyc and INSTALLER=paddle-image, so wheels layers differ byte for byte");
    diffs.push_back("each wheels layer is a COPY (wheels or lock, kept under /tmp/paddle-image) plus a RUN pip "
                    "install layer, instead of one layer");
  }
  diffs.push_back("file times are the build's, not SOURCE_DATE_EPOCH, and layer order inside a tar is the "
                  "builder's: digests are not reproducible across builds");
  diffs.push_back("the labels paddle-image computes (org.opencontainers.image.*, io.paddle-image.* from requires:) "
                  "are not set");
  if (!mode_diffs.empty()) {
    std::vector<std::string> unique;
    for (const auto& m : mode_diffs) {
      if (std::find(unique.begin(), unique.end(), m) == unique.end()) {
        unique.push_back(m);
      }
    }
    mode_diffs = unique;
    diffs.push_back("file and directory modes of " + util::join(mode_diffs, ", ") +
                    " are not set as paddle-image sets them (COPY --chmod cannot give files and directories different "
                    "modes): see the notes at those layers");
  }
  if (excludes) {
    diffs.push_back("exclude: patterns and .paddleimageignore are not read by docker: put them in .dockerignore");
  }
  d["differences"] = text_list(diffs, "text");
  add_config(in.config, d);
  return d;
}

nlohmann::json dockerfile_schema() {
  return nlohmann::json::parse(R"({
    "spec_file": null, "from": null, "platform_flag": null,
    "differences": {"text": null},
    "layers": {"index": null, "name": null, "kind": null, "notes": {"text": null}, "instructions": {"line": null}},
    "has_config": null,
    "env": {"name": null, "value": null},
    "labels": {"key": null, "value": null},
    "ports": {"port": null},
    "workdir": null, "user": null, "stop_signal": null, "entrypoint": null, "cmd": null
  })");
}

std::string render_dockerfile(const DockerfileInput& in, const std::filesystem::path& template_dir) {
  return render(find_template("Dockerfile.mustache", template_dir), dockerfile_data(in), dockerfile_schema(),
                Escape::dockerfile);
}

} // namespace templates
