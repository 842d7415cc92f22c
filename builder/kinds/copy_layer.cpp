// The files and data layers: the copy rules' entries, keyed by their stat data, with
// the walk memo that lets an unchanged tree be reused without a walk, and `split`
// (a layer shipped as parts of about a given size). A layer of remote sources alone
// is keyed by their pins instead (nothing read or downloaded to find it).
#include "builder/layer_kind.hpp"
#include "builder/remote_sources.hpp"
#include "layers/tree.hpp"
#include "layers/walk_memo.hpp"
#include "util/error.hpp"
#include "util/url.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace builder {

using util::Error;
using util::ErrorKind;

namespace {

// A files or data layer's entries, as they land on the base, and the key made from them.
struct CopyWalk {
  layers::EntrySet set;
  layers::WalkMemo memo; // the key, the tree, the links and what was stat'ed
  // Racily clean paths (layers::racily_clean against the walk's start): with any, the
  // memo is not kept; the files among them are checked by content on a later hit.
  bool racy = false;
  layers::ContentChecks checks;
};

// `landing`: landing_id, recorded in the memo.
std::unique_ptr<CopyWalk> walk_copy_layer(const spec::LayerSpec& l, const LayerContext& cx,
                                          const std::string& landing) {
  auto w = std::make_unique<CopyWalk>();
  const std::int64_t start_ns = layers::wall_clock_ns();
  w->set.set_threads(cx.options.threads);
  w->set.set_walk_log(&w->memo.log);
  for (const auto& c : l.copy().copies) {
    w->set.add(copy_rule(c, l));
  }
  w->set.set_walk_log(nullptr);
  w->set.finalize(layers::Owner{});
  w->racy = layers::log_has_racy_paths(w->memo.log, start_ns);
  if (w->racy) {
    w->checks = content_checks(w->set, start_ns, cx.options.threads);
  }
  w->memo.links = land_on_base(w->set, cx, l);
  w->memo.tree = layers::entry_tree(w->set);
  w->memo.landing = landing;
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  key.add({{"kind", "copy"}});
  for (const auto& c : l.copy().copies) { // what was left out is part of the inputs too
    key.add({{"ignore", c.ignore}, {"ignore_prefix", c.ignore_prefix}});
  }
  add_entries_to_key(key, w->set);
  w->memo.key = key.finish();
  return w;
}

// Where the walk memo of a files or data layer lives: named by the layer and by
// everything its key is made from but the file system and what the layer lands on
// (the rules, the key's start), so a layer has one memo, whichever earlier layers it
// lands on, and two layers of the same rules have one each.
std::filesystem::path walk_memo_file(const spec::LayerSpec& l, const LayerContext& cx) {
  KeyHasher id;
  id.add({{"walk-memo", 2}, {"layer", l.name}});
  start_layer_key(id, cx.compress, cx.options);
  for (const auto& c : l.copy().copies) {
    layers::CopyRule r = copy_rule(c, l);
    id.add({{"from", r.from.string()},
            {"to", r.to},
            {"exclude", r.exclude},
            {"mode", r.file_mode.value_or(~0U)},
            {"dir_mode", r.dir_mode.value_or(~0U)},
            {"owner", {r.owner.uid, r.owner.gid, r.owner.uname.str(), r.owner.gname.str()}},
            {"absolute_symlinks", r.allow_absolute_symlinks},
            {"ignore", r.ignore},
            {"ignore_prefix", r.ignore_prefix},
            {"symlink", r.symlink.value_or("")},
            {"directory", r.directory}});
  }
  return cx.cache.layout().walk_memo(id.finish());
}

// What a layer lands on, as a memo records it: the base's and the earlier layers'
// digests (a layer's tree follows from its digest) and the view's format.
std::string landing_id(const LayerContext& cx) {
  KeyHasher id;
  id.add({{"base-view", layers::BaseView::k_format}, {"layers", cx.landing.layers()}});
  return id.finish();
}

// The key of part `i` of a layer split into parts of `split` bytes: the parts follow
// from the whole layer's entries and the part size, so the whole layer's key and those
// two name each part (the same for the registry cache's portable key).
std::string part_key(const std::string& layer_key, std::uint64_t split, std::size_t i) {
  KeyHasher key;
  key.add({{"split", split}, {"split-format", 1}, {"part", i}, {"layer", layer_key}});
  return key.finish();
}

// Builds or reuses the parts of a split layer (spec `split`), each a layer of its own
// in the cache and the image. Part 1's record says how many there are, so a build
// whose parts are all cached needs no walk. `walk_of` walks the layer when needed.
std::vector<LayerReport> build_parts(const spec::LayerSpec& l, const LayerContext& cx, const std::string& layer_key,
                                     const std::function<CopyWalk&()>& walk_of,
                                     const std::function<std::string()>& portable, LayerReport proto,
                                     const layers::ContentChecks& checks) {
  std::optional<std::vector<std::map<std::string, layers::Entry>>> parts;
  std::optional<std::string> portable_key;
  std::vector<LayerReport> out;
  for (std::size_t i = 0, n = 1; i < n; ++i) {
    double t0 = cx.options.clock();
    layers::LayerRecord record;
    layers::Found found = layers::Found::built;
    LayerReport r = proto;
    r.blob = cx.cache.get_or_build(
        part_key(layer_key, l.copy().split, i),
        [&] {
          if (!portable_key) {
            portable_key = portable();
          }
          return part_key(*portable_key, l.copy().split, i);
        },
        [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
          if (!parts) {
            parts = layers::split_entries(walk_of().set.entries(), l.copy().split, spec::k_max_split_parts);
          }
          if (i >= parts->size()) { // the cache said more parts than the entries give: never for one key
            throw Error(ErrorKind::internal, "layer '" + l.name + "': part " + std::to_string(i + 1) + " of " +
                                                 std::to_string(parts->size()));
          }
          rec.parts = parts->size();
          rec.entries = (*parts)[i].size();
          layers::EntrySet set;
          set.replace_entries(std::move((*parts)[i]));
          layers::BlobInfo blob = write_layer(
              set, cx.compress, cx.options.source_date_epoch, tmp,
              l.name + " (part " + std::to_string(i + 1) + "/" + std::to_string(parts->size()) + ")", cx.events);
          (*parts)[i] = set.take_entries();
          return blob;
        },
        found, record, &checks);
    if (i == 0) {
      // Written beside every part 1 (here and in a registry cache's record): without it
      // the image would silently lack the other parts.
      if (!record.parts || *record.parts < 1 || *record.parts > spec::k_max_split_parts) {
        throw Error(ErrorKind::input,
                    "layer '" + l.name + "': the cache's record of part 1 does not say how many parts there are",
                    "drop the layer cache (paddle-image cache prune --all) and build again");
      }
      n = *record.parts;
    }
    note_found(cx, found, r.blob, r);
    r.entries = record.entries.value_or(0);
    r.part = i + 1;
    r.parts = n;
    r.seconds = cx.options.clock() - t0;
    out.push_back(std::move(r));
  }
  return out;
}

// A files or data layer: the copy rules' entries, keyed by their stat data. When the
// walk memo's paths all stat as they did, its key is the walk's, so a reused layer
// needs no walk; a layer that has to be written walks anyway. A split layer gives
// one report per part.
std::vector<LayerReport> build_copy_layer(const spec::LayerSpec& l, const LayerContext& cx, LayerReport r) {
  std::filesystem::path memo_file = walk_memo_file(l, cx);
  std::string landing = landing_id(cx);
  std::optional<layers::WalkMemo> memo =
      layers::reusable_walk_memo(memo_file, landing, cx.options.threads, l.name, cx.events.debug);
  std::unique_ptr<CopyWalk> walk;
  layers::ContentChecks checks; // the walk's, once there is one (none with a memo: nothing was racy)
  auto walk_of = [&]() -> CopyWalk& {
    if (!walk) {
      walk = walk_copy_layer(l, cx, landing);
      checks = walk->checks;
    }
    return *walk;
  };
  if (!memo) {
    walk_of();
  }
  const layers::WalkMemo& m = memo ? *memo : walk->memo;
  tell_links(m.links, cx.events);
  // The registry cache's key: the file contents in place of their stat data.
  auto portable = [&] {
    KeyHasher key;
    start_layer_key(key, cx.compress, cx.options);
    key.add({{"kind", "copy-content"}});
    add_entry_contents_to_key(key, walk_of().set, cx.options.threads);
    return key.finish();
  };
  std::vector<LayerReport> out;
  if (l.copy().split > 0) {
    out = build_parts(l, cx, m.key, walk_of, portable, r, checks);
  } else {
    layers::LayerRecord record;
    layers::Found found = layers::Found::built;
    r.blob = cx.cache.get_or_build(
        m.key, portable,
        [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
          const layers::EntrySet& set = walk_of().set;
          rec.entries = set.entries().size();
          return write_layer(set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
        },
        found, record, &checks);
    note_found(cx, found, r.blob, r);
    r.entries = record.entries.value_or(0);
    out.push_back(std::move(r));
  }
  cx.tree_out = m.tree;
  if (walk) {
    (void)walk->set.take_entries(); // the entries' memory goes before the memo's text is made
    layers::keep_walk_memo(memo_file, walk->memo, walk->racy, l.name, cx.events.debug);
  }
  return out;
}

// Whether every rule of the layer is a remote source (a download or a git source), a
// symlink or a directory: a layer whose key needs no file of this machine.
bool all_remote(const spec::LayerSpec& l) {
  const auto& cs = l.copy().copies;
  return std::all_of(cs.begin(), cs.end(), [](const spec::CopySpec& c) {
    return c.remote.has_value() || c.symlink.has_value() || c.directory;
  });
}

// The key of a layer of remote sources alone: their pins (sha256, commit), how each is
// unpacked and copied, and what the layer lands on; no file is read for it, so a layer
// found here or in a registry cache needs no download at all. Portable as it is.
std::string remote_layer_key(const spec::LayerSpec& l, const LayerContext& cx) {
  KeyHasher key;
  start_layer_key(key, cx.compress, cx.options);
  key.add({{"kind", "copy-remote"}, {"format", 1}, {"landing", landing_id(cx)}});
  for (const auto& c : l.copy().copies) {
    layers::CopyRule r = copy_rule(c, l);
    if (c.symlink) {
      key.add({{"symlink", *c.symlink},
               {"to", r.to},
               {"owner", {r.owner.uid, r.owner.gid, r.owner.uname.str(), r.owner.gname.str()}}});
      continue;
    }
    if (c.directory) {
      key.add({{"directory", r.to},
               {"mode", r.dir_mode.value_or(0755)},
               {"owner", {r.owner.uid, r.owner.gid, r.owner.uname.str(), r.owner.gname.str()}}});
      continue;
    }
    const spec::RemoteSpec& s = *c.remote;
    key.add({{"source", s.is_git() ? "git:" + s.git_commit : "sha256:" + s.sha256},
             {"extract", s.extract},
             {"strip_components", s.strip_components},
             {"include", s.include},
             {"filename", s.extract ? "" : s.filename},
             {"to", r.to},
             {"exclude", r.exclude},
             {"mode", r.file_mode.value_or(~0U)},
             {"dir_mode", r.dir_mode.value_or(~0U)},
             {"owner", {r.owner.uid, r.owner.gid, r.owner.uname.str(), r.owner.gname.str()}},
             {"absolute_symlinks", r.allow_absolute_symlinks}});
  }
  return key.finish();
}

// What a reused layer of remote sources reports of them: its pins, as the spec (or the
// sources lock) gives them; nothing was downloaded.
nlohmann::json pinned_sources(const spec::LayerSpec& l) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : l.copy().copies) {
    if (!c.remote) {
      continue; // a symlink or a directory
    }
    const spec::RemoteSpec& s = *c.remote;
    if (s.is_git()) {
      out.push_back({{"git", util::redact_url(s.url)}, {"commit", s.git_commit}, {"to", c.to}, {"downloaded", false}});
      continue;
    }
    nlohmann::json e = {{"url", util::redact_url(s.url)},
                        {"sha256", s.sha256},
                        {"extract", s.extract},
                        {"to", c.to},
                        {"downloaded", false}};
    if (s.size >= 0) {
      e["size"] = s.size;
    }
    out.push_back(e);
  }
  return out;
}

// A files or data layer of remote sources alone, keyed by remote_layer_key: fetched,
// laid out and walked only when the layer is built. Its tree is kept in the record, so
// a later layer lands on it when this one is reused.
std::vector<LayerReport> build_remote_layer(const spec::LayerSpec& l, const LayerContext& cx, LayerReport r) {
  const std::string key = remote_layer_key(l, cx);
  nlohmann::json sources = pinned_sources(l);
  layers::LayerRecord record;
  layers::Found found = layers::Found::built;
  r.blob = cx.cache.get_or_build(
      key, [&] { return key; },
      [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
        spec::LayerSpec local = with_remote_sources(l, cx, sources);
        std::unique_ptr<CopyWalk> w = walk_copy_layer(local, cx, landing_id(cx));
        tell_links(w->memo.links, cx.events);
        rec.tree = w->memo.tree;
        rec.entries = w->set.entries().size();
        return write_layer(w->set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
      },
      found, record);
  note_found(cx, found, r.blob, r);
  r.entries = record.entries.value_or(0);
  r.sources = sources;
  cx.tree_out = record.tree.value_or(nlohmann::json::array());
  return {std::move(r)};
}

class CopyLayerKind : public LayerKind {
public:
  std::vector<LayerReport> build(const spec::LayerSpec& l, const LayerContext& cx, LayerReport proto) const override {
    if (!has_remote_sources(l)) {
      return build_copy_layer(l, cx, std::move(proto));
    }
    if (all_remote(l) && l.copy().split == 0) {
      return build_remote_layer(l, cx, std::move(proto));
    }
    // Downloads fetched (or found in the cache) and laid out first: the rules then copy
    // them as directories of this machine.
    nlohmann::json sources;
    spec::LayerSpec local = with_remote_sources(l, cx, sources);
    std::vector<LayerReport> out = build_copy_layer(local, cx, std::move(proto));
    for (auto& r : out) {
      r.sources = sources;
    }
    return out;
  }
};

} // namespace

const LayerKind& copy_layer_kind() {
  static const CopyLayerKind kind;
  return kind;
}

} // namespace builder
