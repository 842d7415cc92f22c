// COPY and ADD: files rules from the build context, ADD of a URL as a download rule, and
// where an image path came from (the COPY that wrote it).
#include "templates/migrate/mapper.hpp"

#include "util/encoding.hpp"
#include "util/text.hpp"
#include "util/url.hpp"

#include <algorithm>

namespace templates::migrate {

void Mapper::copy(const DockerInstruction& in) {
  bool add = in.keyword == "ADD";
  std::string rest = util::trim(in.args, " \t\r");
  std::string owner;
  std::string mode;
  std::string checksum;
  std::string from_flag; // --from=
  while (rest.rfind("--", 0) == 0) {
    std::size_t sp = rest.find_first_of(" \t");
    std::string flag = rest.substr(0, sp);
    rest = sp == std::string::npos ? "" : util::trim(rest.substr(sp), " \t\r");
    if (flag.rfind("--chown=", 0) == 0) {
      owner = flag.substr(8);
    } else if (flag.rfind("--chmod=", 0) == 0) {
      mode = flag.substr(8);
    } else if (flag == "--link") {
      continue;
    } else if (add && flag.rfind("--checksum=sha256:", 0) == 0) {
      checksum = util::ascii_lower(flag.substr(18));
    } else if (flag.rfind("--from=", 0) == 0) {
      from_flag = flag.substr(7);
    } else {
      skip("flag " + flag + " has no spec equivalent");
      return;
    }
  }
  if (!from_flag.empty()) {
    copy_from(from_flag, rest, owner, mode);
    return;
  }
  // A heredoc source (COPY <<EOF /dest) is text in the Dockerfile, not a file in the
  // context: a spec copies files only.
  if (std::string first = rest.substr(0, rest.find('\n'));
      first.rfind("<<", 0) == 0 || first.find(" <<") != std::string::npos) {
    skip("a heredoc (" + in.keyword +
         " <<WORD) is text in the Dockerfile: write it to a file in the project and "
         "copy that");
    return;
  }
  std::vector<std::string> w;
  if (auto j = json_form(rest)) {
    w = *j;
  } else {
    bool vars = false;
    w = words(rest, &vars);
    if (vars) {
      skip(unresolved());
      return;
    }
  }
  if (w.size() < 2) {
    skip("needs a source and a destination");
    return;
  }
  std::string dest = join_path(m.workdir, w.back());
  w.pop_back();
  if (w.size() > 1 && dest.back() != '/') {
    dest += '/';
  }
  if (add && w.size() == 1 && is_remote_source(w[0])) {
    add_download(w[0], dest, checksum, owner, mode);
    return;
  }
  for (const auto& src : w) {
    if (is_remote_source(src)) {
      skip("ADD of several URLs: write one ADD --checksum=sha256:HEX URL DEST per file (each becomes a download "
           "rule with url: and sha256:)");
      return;
    }
    if (add && is_archive(src)) {
      skip("ADD unpacks a local archive: unpack it into the project and copy the directory");
      return;
    }
    if (src.find("..") != std::string::npos || (!src.empty() && src[0] == '/')) {
      skip("source outside the build context");
      return;
    }
  }
  // Names as ids: the accounts this Dockerfile adds, root and base-passwd's fixed groups.
  std::optional<std::string> ids = owner.empty() ? std::optional<std::string>("") : numeric_owner(owner);
  if (!ids) {
    skip("--chown=" + owner +
         " names a user or group the base has (not one this Dockerfile adds): the COPY is mapped without an owner; "
         "give numeric ids (owner: \"UID:GID\")");
  }
  Layer l;
  std::string base_name = dest;
  while (base_name.size() > 1 && base_name.back() == '/') {
    base_name.pop_back();
  }
  base_name = base_name.substr(base_name.find_last_of('/') + 1);
  l.name = layer_name(m, base_name.empty() ? "files" : base_name);
  for (const auto& src : w) {
    std::string from = src == "." || src == "./" ? "./" : src.rfind("./", 0) == 0 ? src.substr(2) : src;
    l.copies.push_back(local_copy(m_context + from, dest, ids.value_or(""), mode));
  }
  m.layers.push_back(l);
}

// ADD [--checksum=sha256:HEX] URL DEST: a download rule of a data layer (url: with its
// sha256); without the checksum, the rule to write is the hint.
void Mapper::add_download(const std::string& url, const std::string& dest, const std::string& checksum,
                          const std::string& owner, const std::string& mode) {
  const std::string shown = util::redact_text(url);
  if (shown != url) {
    skip("ADD of a URL with credentials: put them in ~/.netrc and add the download as a rule with url: and sha256:");
    return;
  }
  const bool pinned = checksum.size() == 64 && util::is_lower_hex(checksum);
  if (!checksum.empty() && !pinned) {
    skip("ADD --checksum=" + checksum +
         " is not sha256:HEX (64 hex digits): drop it and let paddle-image lock "
         "--sources record the file's sha256");
    return;
  }
  if (!pinned) {
    need_sources_lock();
  }
  Layer l;
  l.data = true;
  std::string path = url.substr(0, url.find_first_of("?#"));
  std::string file = path.substr(path.rfind('/') + 1);
  l.name = layer_name(m, file.empty() ? "download" : file.substr(0, file.find('.')));
  std::optional<std::string> ids = owner.empty() ? std::optional<std::string>("") : numeric_owner(owner);
  if (!ids) {
    skip("--chown=" + owner +
         " names a user or group the base has (not one this Dockerfile adds): the download is mapped without an "
         "owner; give numeric ids (owner: \"UID:GID\")");
  }
  Copy c;
  c.url = url;
  c.sha256 = pinned ? checksum : "";
  c.to = dest;
  c.owner = ids.value_or("");
  c.mode = mode;
  l.copies.push_back(c);
  m.layers.push_back(l);
}

// COPY --from=X: an image (a reference: it holds '/', ':' or '.'), or a stage that only
// names one, becomes image source rules; a stage that runs commands is listed.
void Mapper::copy_from(const std::string& src, const std::string& rest, const std::string& owner,
                       const std::string& mode) {
  auto stage = m_image_stages.find(util::ascii_lower(src));
  if (stage == m_image_stages.end() && src.find_first_of("/:.") == std::string::npos) {
    skip("COPY --from=" + src + " copies what another stage built: build that stage outside (docker build --target " +
         src + ", or the stage's commands), put the files it leaves at the source paths (" + util::trim(rest, " \t\r") +
         ") into the project, and copy them with a files rule of this spec");
    return;
  }
  auto w = json_form(rest) ? *json_form(rest) : words(rest);
  if (w.size() < 2) {
    skip("needs a source and a destination");
    return;
  }
  std::string dest = join_path(m.workdir, w.back());
  w.pop_back();
  copy_from_image(stage != m_image_stages.end() ? stage->second : src, stage != m_image_stages.end() ? src : "", w,
                  dest, owner, mode);
}

// COPY --from=IMAGE SRC... DEST (or of a stage that only names an image): one image
// source rule per SRC, a path in the image (relative ones from its root, as Docker
// reads them), pinned by the sources lock.
void Mapper::copy_from_image(const std::string& image, const std::string& stage, std::vector<std::string> w,
                             const std::string& dest, const std::string& owner, const std::string& mode) {
  for (const auto& src : w) {
    if (src.find_first_of("*?[") != std::string::npos) {
      skip("COPY --from=" + (stage.empty() ? image : stage) + " of a wildcard (" + src +
           "): an image source takes one path; write one rule per path");
      return;
    }
  }
  std::string dst = w.size() > 1 && dest.back() != '/' ? dest + "/" : dest;
  std::optional<std::string> ids = owner.empty() ? std::optional<std::string>("") : numeric_owner(owner);
  if (!ids) {
    skip("--chown=" + owner +
         " names a user or group the base has (not one this Dockerfile adds): the COPY is "
         "mapped without an owner; give numeric ids (owner: \"UID:GID\")");
  }
  std::string base_name = dst;
  while (base_name.size() > 1 && base_name.back() == '/') {
    base_name.pop_back();
  }
  Layer l;
  l.name = layer_name(m, base_name.substr(base_name.find_last_of('/') + 1).empty()
                             ? "from-image"
                             : base_name.substr(base_name.find_last_of('/') + 1));
  for (const auto& src : w) {
    Copy c = local_copy(join_path("/", src), dst, ids.value_or(""), mode);
    c.image = image;
    l.copies.push_back(c);
  }
  m.layers.push_back(l);
  need_sources_lock();
  if (!stage.empty()) {
    left_out.push_back(std::to_string(m_cur->line) + ": the stage " + stage + " (FROM " + image +
                       "): only an image, which the copy rule reads itself");
  }
}

// Where an image path came from: the context path the last COPY that wrote there
// copied it from (a file copied as or into a destination, or a file inside a copied
// directory); nullopt when no COPY before wrote it, or when a download or git source
// did (then *remote names it). Paths as the spec's copy rules name them (the context
// prefix included).
std::optional<std::string> Mapper::copied_from(const std::string& image_path, const Copy** remote) const {
  auto tidy = [](std::string p) {
    for (std::size_t at; (at = p.find("/./")) != std::string::npos;) {
      p.erase(at, 2);
    }
    for (std::size_t at; (at = p.find("//")) != std::string::npos;) {
      p.erase(at, 1);
    }
    return p.rfind("./", 0) == 0 && p.size() > 2 ? p.substr(2) : p;
  };
  for (auto l = m.layers.rbegin(); l != m.layers.rend(); ++l) {
    for (auto c = l->copies.rbegin(); c != l->copies.rend(); ++c) {
      if (c->from.empty()) { // a download or git source: not a file of the project
        std::string under = c->to.empty() || c->to.back() == '/' ? c->to : c->to + "/";
        if (image_path == c->to || image_path.rfind(under, 0) == 0) {
          if (remote != nullptr) {
            *remote = &*c;
          }
          return std::nullopt;
        }
        continue;
      }
      const bool into = !c->to.empty() && c->to.back() == '/';
      const bool dir_src = !c->from.empty() && c->from.back() == '/';
      if (!into && !dir_src && c->to == image_path) {
        return tidy(c->from); // COPY req.txt /app/req.txt
      }
      const std::string prefix = into ? c->to : c->to + "/";
      if (image_path.rfind(prefix, 0) != 0) {
        continue;
      }
      const std::string rel = image_path.substr(prefix.size());
      std::string trimmed = c->from;
      while (trimmed.size() > 1 && trimmed.back() == '/') {
        trimmed.pop_back();
      }
      const std::string leaf = trimmed.substr(trimmed.find_last_of('/') + 1);
      if (into && !dir_src && rel == leaf) {
        return tidy(c->from); // COPY req.txt /app/
      }
      if (into && !dir_src && leaf.find('.') != std::string::npos && leaf.find('.') != 0) {
        continue; // COPY requirements.txt extra.txt /app/: a file, not the directory of /app/requirements.txt
      }
      return tidy(trimmed + "/" + rel); // a directory's contents: COPY . /app/, COPY src /app/src
    }
  }
  return std::nullopt;
}

} // namespace templates::migrate
