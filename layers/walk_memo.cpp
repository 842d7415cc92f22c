#include "layers/walk_memo.hpp"

#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <ctime>
#include <fstream>
#include <string_view>

namespace layers {

namespace {

// "paddle-image walk memo N": a reader of another N ignores the file.
constexpr std::string_view k_magic = "paddle-image walk memo 2\n";

// Text, one record a line; names and paths are length-prefixed ("LEN:BYTES"), since a
// file name may hold any byte but '/' and NUL, a newline included.
void put_num(std::string& out, auto v) {
  char digits[24];
  auto res = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, res.ptr);
}
void put_bytes(std::string& out, std::string_view s) {
  put_num(out, s.size());
  out.push_back(':');
  out.append(s);
}
void put_sig(std::string& out, const StatSig& s) {
  for (std::int64_t v : {static_cast<std::int64_t>(s.dev), static_cast<std::int64_t>(s.ino),
                         static_cast<std::int64_t>(s.mode), s.size, s.mtime_ns, s.ctime_ns}) {
    put_num(out, v);
    out.push_back(' ');
  }
}

// A cursor over a memo; every get fails (returns false) at the first byte that does not fit.
struct Reader {
  std::string_view in;
  bool lit(std::string_view s) {
    if (in.substr(0, s.size()) != s) {
      return false;
    }
    in.remove_prefix(s.size());
    return true;
  }
  template <typename T> bool num(T& v) {
    auto res = std::from_chars(in.data(), in.data() + in.size(), v);
    if (res.ec != std::errc{}) {
      return false;
    }
    in.remove_prefix(static_cast<std::size_t>(res.ptr - in.data()));
    return true;
  }
  bool bytes(std::string& s) {
    std::size_t n = 0;
    if (!num(n) || !lit(":") || n > in.size()) {
      return false;
    }
    s.assign(in.substr(0, n));
    in.remove_prefix(n);
    return true;
  }
  bool sig(StatSig& s) {
    std::int64_t dev = 0;
    std::int64_t ino = 0;
    std::int64_t mode = 0;
    if (!(num(dev) && lit(" ") && num(ino) && lit(" ") && num(mode) && lit(" ") && num(s.size) && lit(" ") &&
          num(s.mtime_ns) && lit(" ") && num(s.ctime_ns) && lit(" "))) {
      return false;
    }
    s.dev = static_cast<std::uint64_t>(dev);
    s.ino = static_cast<std::uint64_t>(ino);
    s.mode = static_cast<std::uint32_t>(mode);
    return true;
  }
};

bool read_memo(Reader& r, WalkMemo& m) {
  std::string tree;
  std::size_t links = 0;
  std::size_t roots = 0;
  std::size_t dirs = 0;
  if (!(r.lit(k_magic) && r.lit("key ") && r.bytes(m.key) && r.lit("\nlanding ") && r.bytes(m.landing) &&
        r.lit("\ntree ") && r.bytes(tree) && r.lit("\nlinks ") && r.num(links) && r.lit("\n"))) {
    return false;
  }
  m.tree = nlohmann::json::parse(tree, nullptr, false);
  if (!m.tree.is_array()) {
    return false;
  }
  for (const auto& item : m.tree) { // layers::entry_tree's rows, as add_tree_layer reads them
    if (!item.is_array() || item.size() != 8 || !item[0].is_string() || !item[1].is_string() ||
        !item[2].is_number_unsigned() || !item[3].is_number_integer() || !item[4].is_number_integer() ||
        !item[5].is_string() || !item[6].is_string() || !item[7].is_string()) {
      return false;
    }
  }
  for (std::size_t i = 0; i < links; ++i) {
    if (!(r.bytes(m.links.emplace_back()) && r.lit("\n"))) {
      return false;
    }
  }
  if (!(r.lit("roots ") && r.num(roots) && r.lit("\n"))) {
    return false;
  }
  for (std::size_t i = 0; i < roots; ++i) {
    auto& [path, sig] = m.log.roots.emplace_back();
    if (!(r.sig(sig) && r.bytes(path) && r.lit("\n"))) {
      return false;
    }
  }
  if (!(r.lit("dirs ") && r.num(dirs) && r.lit("\n"))) {
    return false;
  }
  m.log.dirs.reserve(std::min<std::size_t>(dirs, r.in.size()));
  for (std::size_t i = 0; i < dirs; ++i) {
    auto& d = m.log.dirs.emplace_back();
    std::size_t children = 0;
    if (!(r.bytes(d.host) && r.lit(" ") && r.num(children) && r.lit("\n"))) {
      return false;
    }
    d.children.reserve(std::min<std::size_t>(children, r.in.size()));
    for (std::size_t c = 0; c < children; ++c) {
      auto& child = d.children.emplace_back();
      if (!(r.sig(child.sig) && r.bytes(child.name) && r.lit("\n"))) {
        return false;
      }
    }
  }
  return r.lit("end\n") && r.in.empty();
}

bool dir_unchanged(const WalkLog::Dir& d) {
  int fd = ::open(d.host.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  bool same = true;
  for (const auto& c : d.children) {
    struct stat st {};
    if (::fstatat(fd, c.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !(stat_sig(st) == c.sig)) {
      same = false;
      break;
    }
  }
  ::close(fd);
  return same;
}

} // namespace

StatSig stat_sig(const struct stat& st) {
  return StatSig{static_cast<std::uint64_t>(st.st_dev),  static_cast<std::uint64_t>(st.st_ino),
                 static_cast<std::uint32_t>(st.st_mode), static_cast<std::int64_t>(st.st_size),
                 util::timespec_ns(st.st_mtim),          util::timespec_ns(st.st_ctim)};
}

std::int64_t timestamp_granularity_ns(std::int64_t mtime_ns, std::int64_t ctime_ns) {
  constexpr std::int64_t k_second = 1'000'000'000;
  if (mtime_ns % k_second == 0 && ctime_ns % k_second == 0) {
    return 2 * k_second;
  }
  // File times come from the coarse clock, up to a tick behind the real one.
  static const std::int64_t tick = [] {
    struct timespec res {};
    std::int64_t t = ::clock_getres(CLOCK_REALTIME_COARSE, &res) == 0 ? util::timespec_ns(res) : 0;
    return std::max<std::int64_t>(2 * t, 10'000'000);
  }();
  return tick;
}

bool racily_clean(std::int64_t mtime_ns, std::int64_t ctime_ns, std::int64_t start_ns) {
  const std::int64_t limit = start_ns - timestamp_granularity_ns(mtime_ns, ctime_ns);
  return mtime_ns >= limit || ctime_ns >= limit;
}

std::int64_t wall_clock_ns() {
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return util::timespec_ns(now);
}

bool log_has_racy_paths(const WalkLog& log, std::int64_t start_ns) {
  auto racy = [&](const StatSig& s) { return racily_clean(s.mtime_ns, s.ctime_ns, start_ns); };
  return std::any_of(log.roots.begin(), log.roots.end(), [&](const auto& r) { return racy(r.second); }) ||
         std::any_of(log.dirs.begin(), log.dirs.end(), [&](const WalkLog::Dir& d) {
           return std::any_of(d.children.begin(), d.children.end(),
                              [&](const WalkLog::Child& c) { return racy(c.sig); });
         });
}

bool walk_unchanged(const WalkLog& log, int threads) {
  for (const auto& [path, sig] : log.roots) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !(stat_sig(st) == sig)) {
      return false;
    }
  }
  // The one worker pool (util::parallel_for); once a difference is found, the rest of
  // the directories are skipped.
  std::atomic<bool> changed{false};
  util::parallel_for(log.dirs.size(), threads, [&](std::size_t i) {
    if (!changed.load(std::memory_order_relaxed) && !dir_unchanged(log.dirs[i])) {
      changed = true;
    }
  });
  return !changed;
}

void write_walk_memo(const fs::path& file, const WalkMemo& memo) {
  std::string out(k_magic);
  out += "key ";
  put_bytes(out, memo.key);
  out += "\nlanding ";
  put_bytes(out, memo.landing);
  out += "\ntree ";
  put_bytes(out, memo.tree.dump());
  out += "\nlinks ";
  put_num(out, memo.links.size());
  out.push_back('\n');
  for (const auto& l : memo.links) {
    put_bytes(out, l);
    out.push_back('\n');
  }
  out += "roots ";
  put_num(out, memo.log.roots.size());
  out.push_back('\n');
  for (const auto& [path, sig] : memo.log.roots) {
    put_sig(out, sig);
    put_bytes(out, path);
    out.push_back('\n');
  }
  out += "dirs ";
  put_num(out, memo.log.dirs.size());
  out.push_back('\n');
  for (const auto& d : memo.log.dirs) {
    put_bytes(out, d.host);
    out.push_back(' ');
    put_num(out, d.children.size());
    out.push_back('\n');
    for (const auto& c : d.children) {
      put_sig(out, c.sig);
      put_bytes(out, c.name);
      out.push_back('\n');
    }
  }
  out += "end\n";
  util::create_dirs(file.parent_path(), "the layer cache's walk directory");
  util::remove_stale_temps_beside(file); // a killed build's
  util::write_file_atomic(file, out);
}

std::optional<WalkMemo> read_walk_memo(const fs::path& file) {
  std::string text;
  try {
    text = util::read_file(file);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  Reader r{text};
  WalkMemo m;
  if (!read_memo(r, m)) {
    return std::nullopt;
  }
  return m;
}

std::string walk_memo_key(const fs::path& file) {
  std::string head(4096, '\0');
  std::ifstream in(file, std::ios::binary);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  Reader r{head};
  std::string key;
  return r.lit(k_magic) && r.lit("key ") && r.bytes(key) && r.lit("\n") ? key : std::string{};
}

std::optional<WalkMemo> reusable_walk_memo(const fs::path& file, const std::string& landing, int threads,
                                           const std::string& layer,
                                           const std::function<void(const std::string&)>& debug) {
  std::optional<WalkMemo> memo = read_walk_memo(file);
  if (memo && memo->landing != landing) {
    debug("walk memo: layer '" + layer + "': the layers below changed; walking");
    memo.reset();
  } else if (memo && !walk_unchanged(memo->log, threads)) {
    debug("walk memo: layer '" + layer + "': something changed; walking");
    memo.reset();
  } else if (memo) {
    debug("walk memo: layer '" + layer + "': no path changed; not walking");
  }
  return memo;
}

void keep_walk_memo(const fs::path& file, const WalkMemo& memo, bool racy, const std::string& layer,
                    const std::function<void(const std::string&)>& debug) {
  if (racy) {
    // Paths changed within the timestamp granularity of the walk: their stat data may
    // not show a change made now, so no memo vouches for them (the next build walks).
    debug("walk memo: layer '" + layer + "': racily clean paths; not kept");
    std::error_code ec;
    fs::remove(file, ec);
    return;
  }
  // Best effort: without the memo the next build walks, as it did before.
  try {
    write_walk_memo(file, memo);
  } catch (const util::Error& e) {
    if (e.kind() == util::ErrorKind::interrupted) {
      throw;
    }
    debug("walk memo: not written: " + std::string(e.what()));
  }
}

void prune_walk_memos(const fs::path& dir, const std::function<bool(const std::string& key)>& has_key, bool all) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string key = walk_memo_key(it->path());
    if (all || key.empty() || key.find_first_not_of("0123456789abcdef") != std::string::npos || !has_key(key)) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

} // namespace layers
