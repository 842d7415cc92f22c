#include "templates/from_spec.hpp"

#include "oci/reference.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

namespace templates {

using util::Error;
using util::ErrorKind;

namespace {

namespace fs = std::filesystem;

// An owner as a COPY --chown value, "UID:GID"; "" for none (root).
std::string owner_text(const std::optional<spec::OwnerSpec>& o) {
  if (!o) {
    return "";
  }
  return std::to_string(o->uid) + ":" + std::to_string(o->gid);
}

// A host path of the spec as the build context (the spec's directory) sees it.
std::string context_path(const fs::path& p, const fs::path& dir, bool* outside = nullptr) {
  fs::path rel = p.lexically_normal().lexically_relative(dir.lexically_normal());
  std::string s = rel.empty() ? p.string() : rel.generic_string();
  if (s.empty() || s == ".") {
    s = ".";
  }
  if (outside != nullptr) {
    *outside = rel.empty() || s.rfind("..", 0) == 0;
  }
  std::error_code ec;
  if (fs::is_directory(p, ec) && s.back() != '/') {
    s += '/';
  }
  return s;
}

// An accounts layer as groupadd and useradd make it: a user without a gid takes the
// group of its name (the base's, or one made with gid = uid), as the build does.
std::vector<std::string> account_commands(const spec::AccountsLayerSpec& a) {
  std::vector<std::string> out;
  for (const auto& g : a.groups) {
    out.push_back("groupadd -g " + std::to_string(g.gid) + " " + util::shell_quote(g.name));
  }
  for (const auto& u : a.users) {
    const std::string name = util::shell_quote(u.name);
    std::string cmd = "useradd -l -u " + std::to_string(u.uid);
    if (u.gid) {
      cmd += " -g " + std::to_string(*u.gid);
    } else {
      out.push_back("{ getent group " + name + " >/dev/null || groupadd -g " + std::to_string(u.uid) + " " + name +
                    "; }");
      cmd += " -g " + name;
    }
    if (!u.groups.empty()) {
      cmd += " -G " + util::shell_quote(util::join(u.groups, ","));
    }
    cmd += " -d " + util::shell_quote(u.home) + (u.create_home ? " -m" : " -M") + " -s " + util::shell_quote(u.shell);
    if (!u.comment.empty()) {
      cmd += " -c " + util::shell_quote(u.comment);
    }
    out.push_back(cmd + " " + name);
    if (u.create_home && u.home_mode != 0755) {
      std::string mode = "0000";
      for (std::size_t i = 0; i < 4; ++i) {
        mode[3 - i] = static_cast<char>('0' + ((u.home_mode >> (3 * i)) & 7));
      }
      out.push_back("chmod " + mode + " " + util::shell_quote(u.home));
    }
  }
  return out;
}

// One layer of the spec as the Dockerfile's: its kind, owner, copies, wheel directory,
// lock and indexes, paths as the build context sees them.
DockerLayer docker_layer(const spec::LayerSpec& l, const fs::path& dir) {
  DockerLayer d;
  d.name = l.name;
  d.kind = spec::kind_name(l.kind);
  d.chown = owner_text(l.owner);
  if (const spec::CopyLayerSpec* body = l.as_copy()) {
    for (const auto& c : body->copies) {
      DockerCopy dc;
      if (c.remote) {
        dc.download.url = c.remote->url;
        dc.download.sha256 = c.remote->sha256;
        dc.download.filename = c.remote->filename;
        dc.download.extract = c.remote->extract;
        dc.download.strip_components = c.remote->strip_components;
        dc.download.include = c.remote->include;
        dc.download.git = c.remote->is_git();
        dc.download.git_commit = c.remote->git_commit;
        dc.download.git_ref = c.remote->git_ref;
      } else if (c.symlink) {
        dc.symlink = c.symlink;
      } else if (c.directory) {
        dc.directory = true;
      } else {
        dc.from = context_path(c.from, dir, &dc.outside_context);
      }
      dc.to = c.to;
      dc.exclude = c.exclude;
      dc.mode = c.mode;
      dc.dir_mode = c.dir_mode;
      dc.chown = owner_text(c.owner);
      d.copies.push_back(dc);
    }
  }
  if (const spec::AccountsLayerSpec* a = l.as_accounts()) {
    d.accounts = account_commands(*a);
  }
  if (const spec::DebsLayerSpec* b = l.as_debs()) {
    d.debs = b->packages;
  }
  if (const spec::WheelsLayerSpec* w = l.as_wheels()) {
    if (!w->dir.empty()) {
      d.wheel_dir = context_path(w->dir, dir);
    }
    if (w->lock_file) {
      d.lock = context_path(*w->lock_file, dir);
    }
    d.indexes = w->indexes;
    d.find_links = w->find_links;
    d.uninstall = w->uninstall;
  }
  return d;
}

// The spec's config as the Dockerfile's (labels in the spec's key order).
DockerConfig docker_config(const spec::ConfigSpec& c) {
  DockerConfig d;
  d.entrypoint = c.entrypoint;
  d.cmd = c.cmd;
  d.env = c.env;
  d.workdir = c.workdir;
  d.user = c.user;
  for (const auto& [k, v] : c.labels) {
    d.labels.emplace_back(k, v);
  }
  d.ports = c.ports;
  d.stop_signal = c.stop_signal;
  return d;
}

// The repository a CI file pushes to: the pipeline appends ":$SHA" (and tags) itself,
// so no tag or digest, and no white space or control character (which would also break
// the YAML). `what` names where it came from.
void check_ci_image(const std::string& image, const std::string& what) {
  std::string why;
  if (std::any_of(image.begin(), image.end(), [](unsigned char c) { return c <= 0x20 || c >= 0x7f; })) {
    why = "has white space or a control character";
  } else {
    try {
      oci::ImageRef r = oci::ImageRef::parse(image);
      if (r.kind != oci::ImageRef::Kind::registry) {
        why = "is not a registry repository";
      } else if (!r.digest.empty() || !r.tag_defaulted) {
        why = "names a tag or digest";
      }
    } catch (const Error& e) {
      why = "is not a repository reference (" + std::string(e.what()) + ")";
    }
  }
  if (!why.empty()) {
    throw Error(ErrorKind::usage, what + " '" + util::escape_bytes(image) + "' " + why,
                "give a repository: --image REGISTRY/REPO (the pipeline tags it with the commit)");
  }
}

// The lock check of a CI file: the wheels layer from an index that --requirements is for.
void ci_lock(const spec::BuildSpec& s, const CiRequest& r, CiInput& in) {
  std::vector<const spec::LayerSpec*> cands;
  for (const auto& l : s.layers) {
    if (l.from_index() && l.wheels().lock_file && (r.layer.empty() || l.name == r.layer)) {
      cands.push_back(&l);
    }
  }
  if (r.requirements.empty()) {
    if (!r.layer.empty()) {
      throw Error(ErrorKind::usage, "--layer goes with --requirements",
                  "name the requirements file the lock is made from");
    }
    return;
  }
  if (cands.empty()) {
    throw Error(ErrorKind::usage,
                r.layer.empty() ? "--requirements: the spec has no wheels layer with a lock from an index"
                                : "--layer " + r.layer + ": no wheels layer of that name with a lock from an index",
                "the lock check is for `wheels: {lock: FILE, index: URL}` layers (docs/wheels.md)");
  }
  if (cands.size() > 1) {
    throw Error(ErrorKind::usage, "--requirements: the spec has several wheels layers from an index",
                "name one with --layer");
  }
  if (std::error_code ec; !fs::is_regular_file(r.requirements, ec)) {
    throw Error(ErrorKind::usage, "--requirements " + util::escape_bytes(r.requirements) + ": no such file",
                "name the requirements file the lock is made from (the CI job runs `paddle-image lock` on it)");
  }
  in.requirements = r.requirements;
  in.lock_layer = cands[0]->name;
  in.lock_file = context_path(*cands[0]->wheels().lock_file, fs::current_path());
}

} // namespace

DockerfileInput dockerfile_input(const spec::BuildSpec& s, const std::string& spec_file) {
  DockerfileInput in;
  in.spec_file = spec_file;
  in.base = s.base;
  in.platform = s.platform.os + "/" + s.platform.architecture +
                (s.platform.variant.empty() ? std::string() : "/" + s.platform.variant);
  in.python = "python3";
  if (s.python) {
    in.python = !s.python->interpreter.empty() ? s.python->interpreter : "python" + s.python->version;
  }
  std::error_code ec;
  in.custom_ignore = fs::exists(s.dir / ".paddleimageignore", ec);
  for (const auto& l : s.layers) {
    in.layers.push_back(docker_layer(l, s.dir));
  }
  in.config = docker_config(s.config);
  return in;
}

CiInput ci_input(const spec::BuildSpec& s, const CiRequest& r) {
  CiInput in;
  in.spec_file = r.spec_file;
  in.image = r.image.empty() ? s.name : r.image;
  if (in.image.empty()) {
    throw Error(ErrorKind::usage, "the spec names no image (image.name) to push", "give --image REGISTRY/REPO");
  }
  check_ci_image(in.image, r.image.empty() ? "image.name" : "--image");
  in.sign = !r.no_sign;
  in.tool = r.tool;
  ci_lock(s, r, in);
  return in;
}

} // namespace templates
