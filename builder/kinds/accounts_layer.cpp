// The accounts layer: the base's account databases with the layer's groups and users
// added (builder/accounts.hpp), each written with the base file's mode and owner, and
// the users' home directories, owned by them and holding the base's /etc/skel as
// `useradd -m` copies it. Keyed by the entries' contents, so the same base and the same
// accounts give the same layer on any machine, and a base whose databases change
// rebuilds it.
#include "builder/accounts.hpp"
#include "builder/layer_kind.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

namespace builder {

using util::Error;
using util::ErrorKind;
namespace fs = std::filesystem;

namespace {

const std::array<const char*, 4> k_databases{"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow"};

// The landing's account databases by path (those it has), each a regular file it kept.
std::map<std::string, std::string> base_databases(const layers::BaseView& landing, const std::string& where) {
  std::map<std::string, std::string> out;
  for (const char* path : k_databases) {
    const layers::ViewNode* n = landing.find(path);
    if (n == nullptr) {
      continue;
    }
    auto it = landing.contents().find(path);
    if (n->type == '2' || n->type == '5' || (n->type != '0' && it == landing.contents().end())) {
      throw Error(ErrorKind::input, where + ": the base's /" + std::string(path) + " is not a regular file",
                  "an accounts layer rewrites it as a file: use a base whose /" + std::string(path) + " is one");
    }
    if (it == landing.contents().end()) {
      throw Error(ErrorKind::input,
                  where + ": the base's /" + std::string(path) + " (" + std::to_string(n->size) +
                      " bytes) is too large to read",
                  "an accounts layer adds to the base's own file, and paddle-image keeps files up to 16 MiB of it");
    }
    out[path] = it->second;
  }
  return out;
}

class Staging {
public:
  explicit Staging(const LayerContext& cx) : m_dir(cx.cache.layout().staging(), "accounts-") {}
  void file(const std::string& path, const std::string& content, std::uint32_t mode, const layers::Owner& owner) {
    fs::path src = m_dir.path() / ("f" + std::to_string(m_count++));
    util::write_file_atomic(src, content);
    layers::Entry e;
    e.path = path;
    e.mode = mode;
    e.owner = owner;
    e.size = static_cast<std::int64_t>(content.size());
    e.source = src.string();
    m_entries[path] = e;
  }
  void dir(const std::string& path, std::uint32_t mode, const layers::Owner& owner) {
    layers::Entry e;
    e.path = path;
    e.type = layers::Entry::Type::dir;
    e.mode = mode;
    e.owner = owner;
    m_entries[path] = e;
  }
  std::map<std::string, layers::Entry>& entries() { return m_entries; }

private:
  util::TempDir m_dir;
  int m_count = 0;
  std::map<std::string, layers::Entry> m_entries;
};

// A home directory with /etc/skel's directories and files in it, all the user's.
void add_home(Staging& st, const AccountHome& h, const layers::BaseView& landing) {
  const layers::Owner owner{h.uid, h.gid, layers::Name(h.user), layers::Name(h.group)};
  st.dir(h.path, h.mode, owner);
  const std::string skel = "etc/skel/";
  for (auto it = landing.nodes().lower_bound(skel); it != landing.nodes().end() && it->first.rfind(skel, 0) == 0;
       ++it) {
    const std::string to = h.path + "/" + it->first.substr(skel.size());
    const layers::ViewNode& n = it->second;
    auto content = landing.contents().find(it->first);
    if (n.type == '5') {
      st.dir(to, n.mode & 07777, owner);
    } else if (n.type == '0' && content != landing.contents().end()) {
      st.file(to, content->second, n.mode & 07777, owner);
    }
  }
}

class AccountsLayerKind : public LayerKind {
public:
  std::vector<LayerReport> build(const spec::LayerSpec& l, const LayerContext& cx, LayerReport proto) const override {
    const std::string where = l.origin + ": layer '" + l.name + "'";
    MergedAccounts merged = merge_accounts(l.accounts(), base_databases(cx.landing, where), "layer '" + l.name + "'");
    for (const auto& note : merged.notes) {
      cx.events.info("  " + note);
    }
    Staging st(cx);
    layers::EntrySet set;
    for (const auto& [path, content] : merged.files) {
      const layers::ViewNode* n = cx.landing.find(path);
      st.file(path, content, n != nullptr ? n->mode & 07777 : 0644, n != nullptr ? n->owner : layers::Owner{});
    }
    for (const auto& h : merged.homes) {
      add_home(st, h, cx.landing);
    }
    set.replace_entries(std::move(st.entries()));
    set.add_missing_parents(layers::Owner{});
    tell_links(land_on_base(set, cx, l), cx.events);
    KeyHasher key;
    start_layer_key(key, cx.compress, cx.options);
    key.add({{"kind", "accounts"}});
    add_entry_contents_to_key(key, set, 1);
    const std::string k = key.finish();
    layers::LayerRecord record;
    layers::Found found = layers::Found::built;
    layers::BlobInfo blob = cx.cache.get_or_build(
        k, [&] { return k; }, // made of the entries' contents: portable as it is
        [&](util::AtomicFile& tmp, layers::LayerRecord& rec) {
          rec.tree = layers::entry_tree(set);
          rec.entries = set.entries().size();
          return write_layer(set, cx.compress, cx.options.source_date_epoch, tmp, l.name, cx.events);
        },
        found, record);
    note_found(cx, found, blob, proto);
    proto.entries = record.entries.value_or(0);
    cx.tree_out = record.tree.value_or(nlohmann::json::array());
    proto.blob = blob;
    return {std::move(proto)};
  }
};

} // namespace

const LayerKind& accounts_layer_kind() {
  static const AccountsLayerKind kind;
  return kind;
}

} // namespace builder
