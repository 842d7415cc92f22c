#include "spec/parse_context.hpp"

#include "oci/reference.hpp"
#include "spec/source_glob.hpp"
#include "util/encoding.hpp"
#include "util/error.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>

// The layer kinds of a spec: each kind's parser and the one table that registers them
// (k_kinds). A new kind adds its spec type (spec.hpp), a parser here and a row in the
// table; the builder's side is builder/kinds/ (ARCHITECTURE.md, "Adding a layer kind").
namespace spec {

using namespace detail;

namespace {

// Whether a URL's authority carries userinfo ("user:password@host").
bool has_userinfo(const std::string& url) {
  auto start = url.find("//");
  if (start == std::string::npos) {
    return false;
  }
  auto at = url.find('@', start + 2);
  return at != std::string::npos && at < url.find('/', start + 2);
}

// A download's or a git source's `strip_components` and `include` (how its tree is unpacked).
void extraction_fields(const Ctx& c, const YAML::Node& item, const std::string& f, RemoteSpec& r) {
  if (item["strip_components"]) {
    std::int64_t n = c.integer(item["strip_components"], f + ".strip_components");
    if (n < 0 || n > 64) {
      c.fail(item["strip_components"], f + ".strip_components", "must be 0 to 64",
             "the number of leading path components to drop, as tar --strip-components takes it");
    }
    r.strip_components = static_cast<int>(n);
  }
  if (item["include"]) {
    r.include = c.str_list(item["include"], f + ".include");
  }
}

// A rule's `git` at its `commit`: exported as an extracted tree.
RemoteSpec git_source(const Ctx& c, const YAML::Node& item, const std::string& f) {
  RemoteSpec r;
  r.url = c.str(item["git"], f + ".git");
  bool scheme_ok = r.url.rfind("https://", 0) == 0 || r.url.rfind("http://", 0) == 0 ||
                   r.url.rfind("file://", 0) == 0 || r.url.rfind("ssh://", 0) == 0;
  if (!scheme_ok) {
    c.fail(item["git"], f + ".git", "'" + r.url + "' is not an https://, http://, ssh:// or file:// repository URL",
           "e.g. https://github.com/PaddlePaddle/PaddleOCR.git");
  }
  if (r.url.rfind("ssh://", 0) != 0 && has_userinfo(r.url)) {
    c.fail(item["git"], f + ".git", "the URL carries credentials",
           "let git find them (a credential helper, ~/.netrc): a spec is shared and never holds secrets");
  }
  r.git = true;
  if (!item["commit"] && !item["ref"]) {
    c.fail(item, f, "a git source needs 'commit' (the full commit to export) or 'ref' (a branch or tag)",
           "give ref: v2.7.0 and run paddle-image lock --sources --spec " + c.file().filename().string() +
               ", which pins it to its commit in the sources lock");
  }
  if (item["ref"]) {
    r.git_ref = c.str(item["ref"], f + ".ref");
    if (r.git_ref.empty() || r.git_ref.front() == '-' ||
        r.git_ref.find_first_of(" \t\n:?*[\\~^") != std::string::npos) {
      c.fail(item["ref"], f + ".ref", "'" + r.git_ref + "' is not a branch or tag name", "e.g. ref: release/2.7");
    }
  }
  if (item["commit"]) {
    r.git_commit = util::ascii_lower(c.str(item["commit"], f + ".commit"));
    if (r.git_commit.size() != 40 || !util::is_lower_hex(r.git_commit)) {
      c.fail(item["commit"], f + ".commit", "'" + r.git_commit + "' is not a full commit (40 hex digits)",
             "a tag or branch moves: put it in ref: and let paddle-image lock --sources pin the commit it names now");
    }
    r.pinned_by = "spec";
  }
  r.extract = true;
  extraction_fields(c, item, f, r);
  for (const char* k : {"sha256", "size", "extract", "allow_outside", "exclude"}) {
    if (item[k]) {
      c.fail(item[k], f + "." + k, std::string("'") + k + "' does not apply to a git source",
             "a git source is its commit; choose paths with include:");
    }
  }
  return r;
}

bool is_hex64(const std::string& s) {
  return s.size() == 64 && util::is_lower_hex(s);
}

// A rule's `image` (a reference, pinned by @sha256: or digest: or else by the sources
// lock) with `from`, an absolute path in that image.
ImageSourceSpec image_source(const Ctx& c, const YAML::Node& item, const std::string& f, const fs::path& dir) {
  ImageSourceSpec im;
  const std::string written = c.str(item["image"], f + ".image");
  oci::ImageRef ref;
  try {
    ref = oci::ImageRef::parse(written);
  } catch (const Error& e) {
    c.fail(item["image"], f + ".image", e.what(), "e.g. image: nvcr.io/nvidia/tritonserver:21.10-py3, or oci:DIR:TAG");
  }
  if (ref.kind == oci::ImageRef::Kind::registry && !ref.digest.empty()) {
    im.digest = ref.digest;
    im.pinned_by = "spec";
    ref.digest.clear();
    if (ref.tag_defaulted) {
      ref.tag.clear();
    }
  }
  im.ref = ref.kind == oci::ImageRef::Kind::registry ? written.substr(0, written.find('@')) : written;
  if (ref.kind != oci::ImageRef::Kind::registry && fs::path(ref.path).is_relative()) {
    ref.path = (dir / ref.path).lexically_normal().string();
  }
  im.resolved = ref.kind == oci::ImageRef::Kind::registry ? im.ref : ref.str();
  if (item["digest"]) {
    std::string d = c.str(item["digest"], f + ".digest");
    if (d.rfind("sha256:", 0) != 0 || !is_hex64(d.substr(7))) {
      c.fail(item["digest"], f + ".digest", "'" + d + "' is not sha256:HEX (64 hex digits)",
             "leave it out and let paddle-image lock --sources record the image's digest");
    }
    if (!im.digest.empty() && im.digest != d) {
      c.fail(item["digest"], f + ".digest", "differs from the digest in image:", "give the digest once");
    }
    im.digest = d;
    im.pinned_by = "spec";
  }
  if (!item["from"]) {
    c.fail(item, f, "missing 'from'", "name the path in the image, e.g. from: /opt/tritonserver/bin/");
  }
  im.path = c.str(item["from"], f + ".from");
  check_image_path(c, item["from"], f + ".from", im.path);
  while (im.path.size() > 1 && im.path.back() == '/') {
    im.path.pop_back();
  }
  return im;
}

// A rule's `url` with its sha256, and how it is extracted.
RemoteSpec remote_source(const Ctx& c, const YAML::Node& item, const std::string& f) {
  RemoteSpec r;
  r.url = c.str(item["url"], f + ".url");
  if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0) {
    c.fail(item["url"], f + ".url", "'" + r.url + "' is not an http(s):// URL",
           "give the file's URL, e.g. https://paddle-model-ecology.bj.bcebos.com/.../model.tar");
  }
  auto host_end = r.url.find('/', r.url.find("//") + 2);
  if (has_userinfo(r.url)) {
    c.fail(item["url"], f + ".url", "the URL carries credentials",
           "put them in ~/.netrc (or the file $NETRC names): a spec is shared and never holds secrets");
  }
  std::string path = r.url.substr(0, r.url.find_first_of("?#"));
  r.filename = host_end == std::string::npos ? "" : path.substr(path.rfind('/') + 1);
  // Without sha256 the sources lock pins it (spec/sources_lock.hpp); a build refuses a
  // download neither pins.
  if (item["sha256"]) {
    r.sha256 = c.str(item["sha256"], f + ".sha256");
    if (r.sha256.rfind("sha256:", 0) == 0) {
      r.sha256 = r.sha256.substr(7);
    }
    if (!is_hex64(r.sha256)) {
      c.fail(item["sha256"], f + ".sha256", "'" + r.sha256 + "' is not a SHA-256 (64 lower-case hex digits)",
             "sha256sum FILE prints it; or drop the key and let paddle-image lock --sources record it");
    }
    r.pinned_by = "spec";
  }
  if (item["size"]) {
    r.size = c.integer(item["size"], f + ".size");
    if (r.size < 0) {
      c.fail(item["size"], f + ".size", "must be the file's size in bytes (0 or more)");
    }
  }
  if (item["extract"]) {
    r.extract = boolean(c, item["extract"], f + ".extract");
  }
  extraction_fields(c, item, f, r);
  if (!r.extract && (item["strip_components"] || item["include"])) {
    const char* k = item["strip_components"] ? "strip_components" : "include";
    c.fail(item[k], f + "." + k, "strip_components and include apply to an archive that is extracted",
           "add extract: true");
  }
  if (!r.extract && r.filename.empty() && item["to"] && item["to"].Scalar().back() == '/') {
    c.fail(item["url"], f + ".url", "the URL names no file", "give 'to' the file's path in the image");
  }
  for (const char* k : {"allow_outside", "exclude"}) {
    if (item[k]) {
      c.fail(item[k], f + "." + k, std::string("'") + k + "' applies to a path on this machine",
             r.extract ? "use include: to choose the archive's members" : "drop it");
    }
  }
  for (const char* k : {"commit", "ref"}) {
    if (item[k]) {
      c.fail(item[k], f + "." + k, std::string("'") + k + "' belongs to a git source (git:)",
             "a download is pinned by its sha256");
    }
  }
  return r;
}

// Fails on the first of `keys` that `item` has: "'KEY' does not apply to WHAT", with `hint`
// (the rules that make something in place of a source: symlinks, directories).
void refuse_keys(const Ctx& c, const YAML::Node& item, const std::string& f, std::initializer_list<const char*> keys,
                 const std::string& what, const std::string& hint) {
  for (const char* k : keys) {
    if (item[k]) {
      c.fail(item[k], f + "." + k, std::string("'") + k + "' does not apply to " + what, hint);
    }
  }
}

// `symlink: TARGET` with `to: LINK` (and `owner`): the link itself, nothing read from disk.
CopySpec symlink_rule(const Ctx& c, const YAML::Node& item, const std::string& f) {
  CopySpec cs;
  cs.origin = c.where(item);
  if (!item["to"]) {
    c.fail(item, f, "missing 'to'", "name the link's absolute path in the image, e.g. /usr/local/bin/ppocr");
  }
  cs.to = c.str(item["to"], f + ".to");
  check_image_path(c, item["to"], f + ".to", cs.to);
  if (cs.to.back() == '/' || cs.to == "/") {
    c.fail(item["to"], f + ".to", "a symlink's 'to' is the link's own path, not a directory to put it in",
           "e.g. to: /usr/local/bin/start");
  }
  cs.symlink = c.str(item["symlink"], f + ".symlink");
  if (cs.symlink->empty() || cs.symlink->find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    c.fail(item["symlink"], f + ".symlink", "a link target is a non-empty path on one line",
           "e.g. symlink: /opt/app/run.sh (absolute: an image path) or run.sh (relative to the link's directory)");
  }
  refuse_keys(c, item, f,
              {"sha256", "size", "extract", "strip_components", "include", "commit", "ref", "exclude", "mode",
               "dir_mode", "allow_absolute_symlinks", "allow_outside"},
              "a symlink", "a symlink rule takes symlink, to and owner");
  if (item["owner"]) {
    cs.owner = c.owner(item["owner"], f + ".owner");
  }
  return cs;
}

// `directory: PATH` (with `mode` and `owner`): the directory itself, nothing read from disk.
CopySpec directory_rule(const Ctx& c, const YAML::Node& item, const std::string& f) {
  CopySpec cs;
  cs.origin = c.where(item);
  cs.directory = true;
  cs.to = c.str(item["directory"], f + ".directory");
  check_image_path(c, item["directory"], f + ".directory", cs.to);
  if (cs.to.find_first_not_of('/') == std::string::npos) {
    c.fail(item["directory"], f + ".directory", "'/' is there in every image",
           "name the directory to make, e.g. directory: /PaddleOCR/inference");
  }
  const std::string takes = "a directory rule takes directory (its path), mode and owner";
  refuse_keys(c, item, f, {"to"}, "a directory rule", takes + "; the path is directory's value");
  refuse_keys(c, item, f,
              {"sha256", "size", "extract", "strip_components", "include", "commit", "ref", "exclude", "dir_mode",
               "allow_absolute_symlinks", "allow_outside"},
              "a directory rule", takes);
  if (item["mode"]) {
    cs.dir_mode = c.mode(item["mode"], f + ".mode");
  }
  if (item["owner"]) {
    cs.owner = c.owner(item["owner"], f + ".owner");
  }
  return cs;
}

// A local rule's `from`: the one path, or each path a wildcard matches (Docker's rules:
// no match is an error, several need a `to` ending in '/'); a literal file whose name
// holds a wildcard character is that file.
std::vector<fs::path> local_sources(const Ctx& c, const YAML::Node& item, const std::string& f, const fs::path& dir,
                                    const std::vector<std::string>& ignore, const CopySpec& cs) {
  const std::string pattern = c.str(item["from"], f + ".from");
  if (!has_wildcard(pattern)) {
    return {source_path(c, item["from"], f + ".from", dir)};
  }
  fs::path literal = source_path(c, item["from"], f + ".from", dir, false);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(literal, ec))) {
    return {literal};
  }
  std::vector<fs::path> matches = glob_sources(pattern, dir, ignore);
  if (matches.empty()) {
    c.fail(item["from"], f + ".from",
           "'" + pattern + "' matches nothing in " + dir.string() +
               (ignore.empty() ? std::string() : " (what .paddleimageignore names is not matched)"),
           "'*', '?' and '[...]' match within one path component, as in Docker's COPY: check the pattern against "
           "the files beside the spec");
  }
  if (matches.size() > 1 && cs.to.back() != '/') {
    c.fail(item["to"], f + ".to",
           "'" + pattern + "' matches " + std::to_string(matches.size()) + " paths (" + matches[0].filename().string() +
               ", " + matches[1].filename().string() + (matches.size() > 2 ? ", ..." : "") +
               "), so 'to' must be a directory ending in '/', as Docker requires",
           "write to: " + cs.to + "/");
  }
  return matches;
}

// Every key a copy rule takes, whatever its source.
const std::vector<std::string> k_copy_keys{"from",
                                           "url",
                                           "git",
                                           "image",
                                           "digest",
                                           "symlink",
                                           "directory",
                                           "commit",
                                           "ref",
                                           "sha256",
                                           "size",
                                           "extract",
                                           "strip_components",
                                           "include",
                                           "to",
                                           "exclude",
                                           "mode",
                                           "dir_mode",
                                           "owner",
                                           "allow_absolute_symlinks",
                                           "allow_outside"};

std::vector<CopySpec> copies(const Ctx& c, const YAML::Node& n, const std::string& field, const fs::path& dir,
                             const std::vector<std::string>& ignore) {
  if (!n.IsSequence() || n.size() == 0) {
    c.fail(n, field, "must be a non-empty list of {from, to}");
  }
  std::vector<CopySpec> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    std::string f = field + "[" + std::to_string(i) + "]";
    const YAML::Node& item = n[i];
    c.check_keys(item, f, k_copy_keys);
    if ((item["from"] && !item["image"] ? 1 : 0) + (item["url"] ? 1 : 0) + (item["git"] ? 1 : 0) +
            (item["image"] ? 1 : 0) + (item["symlink"] ? 1 : 0) + (item["directory"] ? 1 : 0) >
        1) {
      c.fail(item, f,
             "a copy rule takes one of 'from' (a path), 'url' (a download), 'git' (a repository), 'image' (with "
             "from: a path in that image), 'symlink' (a link to make) and 'directory' (a directory to make)",
             "split it into several rules");
    }
    if (item["symlink"]) {
      out.push_back(symlink_rule(c, item, f));
      continue;
    }
    if (item["directory"]) {
      out.push_back(directory_rule(c, item, f));
      continue;
    }
    if (!item["from"] && !item["url"] && !item["git"]) {
      c.fail(item, f, "missing 'from'",
             "name a file or directory relative to the spec, or a file to download with url: and sha256:");
    }
    if (!item["to"]) {
      c.fail(item, f, "missing 'to'", "name the absolute destination in the image, e.g. /app/");
    }
    CopySpec cs;
    std::vector<fs::path> matches;
    cs.origin = c.where(item);
    cs.to = c.str(item["to"], f + ".to");
    check_image_path(c, item["to"], f + ".to", cs.to);
    if (item["digest"] && !item["image"]) {
      c.fail(item["digest"], f + ".digest", "'digest' belongs to an image source (image:)",
             "drop it, or give image: with from: a path in the image");
    } else if (item["image"]) {
      for (const char* k : {"sha256", "size", "extract", "strip_components", "include", "commit", "ref"}) {
        if (item[k]) {
          c.fail(item[k], f + "." + k, std::string("'") + k + "' belongs to a download or a git source",
                 "drop it: an image source is the path from: in the image");
        }
      }
      cs.image = image_source(c, item, f, dir);
    } else if (item["git"]) {
      cs.remote = git_source(c, item, f);
    } else if (item["url"]) {
      cs.remote = remote_source(c, item, f);
    } else {
      for (const char* k : {"sha256", "size", "extract", "strip_components", "include", "commit", "ref"}) {
        if (item[k]) {
          c.fail(item[k], f + "." + k, std::string("'") + k + "' belongs to a download (url:)",
                 "drop it, or give url: in place of from:");
        }
      }
      matches = local_sources(c, item, f, dir, ignore, cs);
    }
    if (item["exclude"]) {
      cs.exclude = c.str_list(item["exclude"], f + ".exclude");
    }
    if (item["mode"]) {
      cs.mode = c.mode(item["mode"], f + ".mode");
    }
    if (item["dir_mode"]) {
      cs.dir_mode = c.mode(item["dir_mode"], f + ".dir_mode");
    }
    if (item["owner"]) {
      cs.owner = c.owner(item["owner"], f + ".owner");
    }
    if (item["allow_absolute_symlinks"]) {
      cs.allow_absolute_symlinks = boolean(c, item["allow_absolute_symlinks"], f + ".allow_absolute_symlinks");
    }
    if (item["allow_outside"]) {
      cs.allow_outside = boolean(c, item["allow_outside"], f + ".allow_outside");
    }
    if (cs.remote || cs.image) {
      out.push_back(cs); // fetched into the cache: no .paddleimageignore, never outside the spec
      continue;
    }
    for (const auto& from : matches) { // one rule per match of a wildcard, as Docker copies each
      CopySpec one = cs;
      one.from = from;
      if (auto rel = inside_spec_dir(one.from, dir)) {
        one.ignore = ignore;
        one.ignore_prefix = *rel;
      } else if (!one.allow_outside) {
        c.fail(item["from"], f + ".from",
               "source '" + item["from"].Scalar() + "' lies outside the spec's directory " + dir.string() +
                   " (it resolves to " + resolved(one.from).string() + ")",
               "move it next to the spec, or set allow_outside: true on this rule if it really belongs in the image");
      } else {
        one.ignore = {".git"}; // .paddleimageignore speaks of the spec's directory only
      }
      out.push_back(one);
    }
  }
  return out;
}

// `index` / `find_links`: a string or a list of strings. URLs need http(s)://; a
// find_links entry may also be a path (relative to the spec) to a directory or page.
std::vector<std::string> url_list(const Ctx& c, const YAML::Node& n, const std::string& field, const fs::path& dir,
                                  bool paths_allowed) {
  std::vector<std::string> out;
  if (!n) {
    return out;
  }
  std::vector<std::pair<YAML::Node, std::string>> items;
  if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      items.emplace_back(n[i], field + "[" + std::to_string(i) + "]");
    }
  } else {
    items.emplace_back(n, field);
  }
  for (const auto& [node, f] : items) {
    std::string v = c.str(node, f);
    bool url = v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0;
    if (!url && v.rfind("file://", 0) == 0 && paths_allowed) {
      out.push_back(v);
      continue;
    }
    if (!url && (!paths_allowed || v.find("://") != std::string::npos)) {
      c.fail(node, f, "'" + v + "' is not an http(s) URL",
             paths_allowed ? "give https://host/path, or a path to a directory of wheels"
                           : "give the simple-API root, e.g. https://mirror.example/simple");
    }
    out.push_back(url ? v : (dir / v).lexically_normal().string());
  }
  return out;
}

// files / data: the copy rules under the kind's key, and `split` (the layer's, else the
// top level's).
void parse_copy_layer(const Ctx& c, const YAML::Node& n, const std::string& key, const std::string& field,
                      const BuildSpec& s, LayerSpec& l) {
  CopyLayerSpec body;
  body.copies = copies(c, n[key], field + "." + key, s.dir, s.ignore);
  body.split = n["split"] ? split_size(c, n["split"], field + ".split") : s.split;
  l.body = std::move(body);
}

// wheels.uninstall: [NAME, ...] (or one NAME), in a layer that installs nothing else.
void parse_uninstall(const Ctx& c, const YAML::Node& w, const std::string& wf, WheelsLayerSpec& body) {
  const YAML::Node& u = w["uninstall"];
  const std::string uf = wf + ".uninstall";
  for (const char* k : {"dir", "lock", "index", "find_links", "allow_conflicts"}) {
    if (w[k]) {
      c.fail(w[k], wf + "." + k,
             std::string("a layer that uninstalls installs nothing, so '") + k + "' has no use here",
             "put what it installs in a wheels layer of its own after this one");
    }
  }
  std::vector<std::string> names;
  if (u.IsScalar()) {
    names.push_back(u.Scalar());
  } else if (u.IsSequence() && u.size() > 0) {
    for (const auto& e : u) {
      if (!e.IsScalar()) {
        c.fail(e, uf, "each entry is a project name", "uninstall: [opencv-python]");
      }
      names.push_back(e.Scalar());
    }
  } else {
    c.fail(u, uf, "a project name or a list of them", "uninstall: [opencv-python]");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!is_project_name(names[i])) {
      c.fail(u.IsSequence() ? u[i] : u, uf, "'" + names[i] + "' is not a project name (no version, extras or markers)",
             "name the project only, as pip uninstall takes it: uninstall: [opencv-python]");
    }
  }
  body.uninstall = names;
  body.uninstall_origin = c.where(u);
}

// wheels: a directory (`wheels: DIR` or `dir:`) or a lock fetched from an index.
void parse_wheels_layer(const Ctx& c, const YAML::Node& n, const std::string& key, const std::string& field,
                        const BuildSpec& s, LayerSpec& l) {
  WheelsLayerSpec body;
  const YAML::Node& w = n[key];
  std::string wf = field + "." + key;
  if (w.IsScalar()) {
    body.dir = source_path(c, w, wf, s.dir);
  } else {
    c.check_keys(w, wf, {"dir", "lock", "index", "find_links", "allow_conflicts", "uninstall"});
    if (w["allow_conflicts"]) {
      body.allow_conflicts = boolean(c, w["allow_conflicts"], wf + ".allow_conflicts");
    }
    if (w["uninstall"]) {
      parse_uninstall(c, w, wf, body);
      l.body = std::move(body);
      return;
    }
    if (!w["dir"] && !w["lock"]) {
      c.fail(w, wf,
             "a wheels layer needs 'dir' (a directory of .whl files) or 'lock' (a hash-locked requirements "
             "file, fetched from a package index)",
             "add lock: requirements.lock (paddle-image lock writes one), or dir: wheels/");
    }
    if (w["dir"]) {
      body.dir = source_path(c, w["dir"], wf + ".dir", s.dir);
      for (const char* k : {"index", "find_links"}) {
        if (w[k]) {
          c.fail(w[k], wf + "." + k,
                 std::string("'") + k + "' fetches wheels from an index; 'dir' installs a directory",
                 "drop 'dir' to fetch the lock's wheels from the index (a directory can be a find_links entry)");
        }
      }
    }
    if (w["lock"]) {
      // A lock from an index may not exist yet: `paddle-image lock` reads this spec to
      // write it (the build names the file when it is still missing).
      body.lock_file = source_path(c, w["lock"], wf + ".lock", s.dir, w["dir"].IsDefined());
      body.lock_origin = c.where(w["lock"]);
    }
    body.indexes = url_list(c, w["index"], wf + ".index", s.dir, false);
    body.find_links = url_list(c, w["find_links"], wf + ".find_links", s.dir, true);
  }
  std::error_code ec;
  if (!body.dir.empty() && !fs::is_directory(body.dir, ec)) {
    c.fail(w, wf, "'" + body.dir.string() + "' is not a directory");
  }
  if (body.lock_file && fs::exists(*body.lock_file, ec) && !fs::is_regular_file(*body.lock_file, ec)) {
    c.fail(w["lock"], wf + ".lock", "'" + body.lock_file->string() + "' is not a file",
           "write the lock with paddle-image lock requirements.txt -o " + w["lock"].Scalar());
  }
  l.body = std::move(body);
}

// A Debian package name (policy 5.6.1), optionally "=VERSION" (policy 5.6.12's characters).
bool valid_deb_request(const std::string& r) {
  std::string name = r.substr(0, r.find('='));
  bool name_ok = name.size() >= 2 &&
                 std::string("abcdefghijklmnopqrstuvwxyz0123456789").find(name[0]) != std::string::npos &&
                 name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789+.-") == std::string::npos;
  if (!name_ok) {
    return false;
  }
  if (r.find('=') == std::string::npos) {
    return true;
  }
  std::string version = r.substr(r.find('=') + 1);
  return !version.empty() && std::isdigit(static_cast<unsigned char>(version[0])) &&
         version.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.+~:-") ==
             std::string::npos;
}

// debs: packages from apt repositories, installed from the lock `paddle-image lock` writes.
void parse_debs_layer(const Ctx& c, const YAML::Node& n, const std::string& key, const std::string& field,
                      const BuildSpec& s, LayerSpec& l) {
  DebsLayerSpec body;
  const YAML::Node& d = n[key];
  const std::string df = field + "." + key;
  if (!d.IsMap()) {
    c.fail(
        d, df, "must be a map with packages, repositories and lock",
        "e.g. debs: {packages: [libgl1], repositories: [{url: ..., suite: bookworm, keyring: ...}], lock: debs.lock}");
  }
  c.check_keys(d, df, {"packages", "repositories", "lock"});
  if (!d["packages"]) {
    c.fail(d, df, "missing 'packages'", "list the Debian packages to install, e.g. packages: [libgl1, libglib2.0-0]");
  }
  body.packages = c.str_list(d["packages"], df + ".packages");
  if (body.packages.empty()) {
    c.fail(d["packages"], df + ".packages", "lists no package", "name at least one, e.g. [libgl1]");
  }
  for (std::size_t i = 0; i < body.packages.size(); ++i) {
    if (!valid_deb_request(body.packages[i])) {
      c.fail(d["packages"].IsSequence() ? d["packages"][i] : d["packages"], df + ".packages[" + std::to_string(i) + "]",
             "'" + body.packages[i] + "' is not a Debian package name, or NAME=VERSION",
             "names are lower-case letters, digits, '+', '-' and '.', e.g. libglib2.0-0 or libgl1=1.6.0-1");
    }
  }
  const YAML::Node& repos = d["repositories"];
  if (!repos || !repos.IsSequence() || repos.size() == 0) {
    c.fail(repos ? repos : d, df + ".repositories", "must be a non-empty list of apt repositories",
           "e.g. - {url: http://deb.debian.org/debian, suite: bookworm, components: [main], keyring: "
           "/usr/share/keyrings/debian-archive-keyring.gpg}");
  }
  for (std::size_t i = 0; i < repos.size(); ++i) {
    const YAML::Node& r = repos[i];
    const std::string rf = df + ".repositories[" + std::to_string(i) + "]";
    c.check_keys(r, rf, {"url", "suite", "components", "keyring"});
    DebRepositorySpec rs;
    rs.origin = c.where(r);
    for (const char* k : {"url", "suite", "keyring"}) {
      if (!r[k]) {
        c.fail(r, rf, std::string("missing '") + k + "'",
               std::string(k) == "keyring" ? "name the keyring that signs the repository, e.g. "
                                             "/usr/share/keyrings/debian-archive-keyring.gpg"
                                           : "a repository is url, suite, components and keyring, as in "
                                             "'deb [signed-by=KEYRING] URL SUITE COMPONENTS'");
      }
    }
    rs.url = c.str(r["url"], rf + ".url");
    bool scheme_ok =
        rs.url.rfind("http://", 0) == 0 || rs.url.rfind("https://", 0) == 0 || rs.url.rfind("file://", 0) == 0;
    if (!scheme_ok) {
      c.fail(r["url"], rf + ".url", "'" + rs.url + "' is not an http(s):// or file:// URL",
             "give the archive root, e.g. http://deb.debian.org/debian");
    }
    if (has_userinfo(rs.url)) {
      c.fail(r["url"], rf + ".url", "the URL carries credentials",
             "put them in ~/.netrc (or --netrc FILE): a spec and its lock are shared and never hold secrets");
    }
    rs.suite = c.str(r["suite"], rf + ".suite");
    if (rs.suite.empty() || rs.suite.find_first_of(" /") != std::string::npos ||
        rs.suite.find("..") != std::string::npos) {
      c.fail(r["suite"], rf + ".suite", "'" + rs.suite + "' is not a suite name", "e.g. bookworm or bookworm-updates");
    }
    rs.components =
        r["components"] ? c.str_list(r["components"], rf + ".components") : std::vector<std::string>{"main"};
    for (const auto& comp : rs.components) {
      if (comp.empty() || comp.find_first_of(" .") != std::string::npos || comp.front() == '/') {
        c.fail(r["components"], rf + ".components", "'" + comp + "' is not a component name", "e.g. main");
      }
    }
    // Read by `paddle-image lock` only (the build installs from the lock's hashes): it
    // need not exist where the image is built.
    rs.keyring = source_path(c, r["keyring"], rf + ".keyring", s.dir, false);
    body.repositories.push_back(rs);
  }
  if (!d["lock"]) {
    c.fail(d, df, "missing 'lock'",
           "add lock: debs.lock, then write it with paddle-image lock --spec " + s.file.filename().string() +
               " --layer " + l.name);
  }
  body.lock_file = source_path(c, d["lock"], df + ".lock", s.dir, false);
  body.lock_origin = c.where(d["lock"]);
  if (n["owner"]) {
    c.fail(n["owner"], field + ".owner", "a debs layer's files keep the owners their packages give them",
           "drop owner here");
  }
  l.body = std::move(body);
}

using KindParser = void (*)(const Ctx&, const YAML::Node&, const std::string&, const std::string&, const BuildSpec&,
                            LayerSpec&);

struct KindEntry {
  const char* key; // the layer's key that names the kind, also its name in reports and SBOMs
  LayerSpec::Kind kind;
  bool splits; // takes the layer-level `split`
  KindParser parse;
};

// Every layer kind, once.
const std::array<KindEntry, 5> k_kinds{{
    {"wheels", LayerSpec::Kind::wheels, false, parse_wheels_layer},
    {"files", LayerSpec::Kind::files, true, parse_copy_layer},
    {"data", LayerSpec::Kind::data, true, parse_copy_layer},
    {"debs", LayerSpec::Kind::debs, false, parse_debs_layer},
    {"accounts", LayerSpec::Kind::accounts, false, parse_accounts_layer},
}};

const KindEntry& entry_of(LayerSpec::Kind kind) {
  for (const auto& k : k_kinds) {
    if (k.kind == kind) {
      return k;
    }
  }
  return k_kinds[1]; // not reached: every Kind has its row
}

} // namespace

const char* kind_name(LayerSpec::Kind kind) {
  return entry_of(kind).key;
}

std::optional<LayerSpec::Kind> kind_of_name(std::string_view name) {
  for (const auto& k : k_kinds) {
    if (name == k.key) {
      return k.kind;
    }
  }
  return std::nullopt;
}

bool is_project_name(std::string_view name) {
  auto alnum = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  return !name.empty() && alnum(name.front()) && alnum(name.back()) &&
         std::all_of(name.begin(), name.end(),
                     [&](char ch) { return alnum(ch) || ch == '.' || ch == '_' || ch == '-'; });
}

bool ships_copied_files(LayerSpec::Kind kind) {
  return entry_of(kind).parse == parse_copy_layer;
}

const CopyLayerSpec& LayerSpec::copy() const {
  if (const auto* b = as_copy()) {
    return *b;
  }
  throw std::logic_error("layer '" + name + "' is a " + kind_name(kind) + " layer, not files or data");
}
CopyLayerSpec& LayerSpec::copy() {
  return const_cast<CopyLayerSpec&>(std::as_const(*this).copy());
}

const WheelsLayerSpec& LayerSpec::wheels() const {
  if (const auto* b = as_wheels()) {
    return *b;
  }
  throw std::logic_error("layer '" + name + "' is a " + kind_name(kind) + " layer, not wheels");
}
WheelsLayerSpec& LayerSpec::wheels() {
  return const_cast<WheelsLayerSpec&>(std::as_const(*this).wheels());
}

const DebsLayerSpec& LayerSpec::debs() const {
  if (const auto* b = as_debs()) {
    return *b;
  }
  throw std::logic_error("layer '" + name + "' is a " + kind_name(kind) + " layer, not debs");
}

const AccountsLayerSpec& LayerSpec::accounts() const {
  if (const auto* b = as_accounts()) {
    return *b;
  }
  throw std::logic_error("layer '" + name + "' is a " + kind_name(kind) + " layer, not accounts");
}

namespace detail {

LayerSpec parse_layer(const Ctx& c, const YAML::Node& n, const std::string& field, const BuildSpec& s) {
  std::vector<std::string> keys{"name", "compression", "owner", "split"};
  std::string names;
  for (const auto& k : k_kinds) {
    keys.emplace_back(k.key);
    names += std::string(names.empty() ? "'" : k.key == k_kinds.back().key ? " or '" : ", '") + k.key + "'";
  }
  c.check_keys(n, field, keys);
  LayerSpec l;
  l.origin = c.where(n);
  if (!n["name"]) {
    c.fail(n, field, "missing 'name'", "give every layer a short name, e.g. app");
  }
  l.name = c.str(n["name"], field + ".name");
  const KindEntry* kind = nullptr;
  int count = 0;
  for (const auto& k : k_kinds) {
    if (n[k.key]) {
      kind = &k;
      ++count;
    }
  }
  if (count != 1) {
    c.fail(n, field, "a layer needs exactly one of " + names);
  }
  l.kind = kind->kind;
  if (n["split"] && !kind->splits) {
    c.fail(n["split"], field + ".split", std::string("a ") + kind->key + " layer is not split",
           "split applies to files and data layers; drop it here");
  }
  kind->parse(c, n, kind->key, field, s, l);
  if (n["compression"]) {
    l.compression = compression(c, n["compression"], field + ".compression", &s.compression);
  }
  if (n["owner"]) {
    l.owner = c.owner(n["owner"], field + ".owner");
  }
  return l;
}

} // namespace detail

} // namespace spec
