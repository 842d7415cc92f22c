#pragma once
// A debs layer's packages unpacked as dpkg unpacks them onto the system the layer lands
// on (docs/spec.md "dpkg's rules"): checked against the base's dpkg database and the
// layer's earlier packages (a directory is never replaced by a non-directory; a file of
// another package is taken over only by a package that Replaces it, and its ownership
// moves; nothing is written into dpkg's or apt's own directories; conffiles are the
// conffiles member's, shipped as regular files), the base's diversions and stat
// overrides applied, and what dpkg records written beside: every package's info files,
// the base's .list files that lost a file, the status, and etc/ld.so.cache when a
// package asks for ldconfig or adds a loader directory.
#include "builder/build.hpp"
#include "debian/database.hpp"
#include "debian/deb.hpp"
#include "debian/ld_cache.hpp"
#include "debian/lock.hpp"
#include "layers/base_view.hpp"
#include "layers/tree.hpp"

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace builder {

class DebsUnpack {
public:
  // `landing`: what the layer lands on (its contents give the dpkg database and the
  // loader's files); `status` its dpkg status; `architecture` dpkg's ("amd64").
  DebsUnpack(const layers::BaseView& landing, std::string status, std::string architecture,
             std::filesystem::path staging);
  // One package, in the lock's order; Error(input) naming the package, the path and the
  // rule for what dpkg would refuse.
  void install(const debian::LockedPackage& p, const std::filesystem::path& deb);
  // dpkg's records and the loader cache added, every entry of the layer returned; `info`
  // hears what was done (files taken over, the cache written).
  std::map<std::string, layers::Entry> finish(const std::function<void(const std::string&)>& info);

private:
  struct Package {
    debian::DebControl control;
    std::string name, version;
    std::vector<std::string> paths; // as shipped, archive order ("" for "./")
    std::set<std::string> given_up; // paths a later package that Replaces this one took over
    std::vector<std::pair<std::string, std::string>> conffiles; // "/etc/x", md5
    debian::Paragraph status;
    bool make_md5sums = false; // it ships no md5sums: dpkg writes them from what it unpacks
    std::string md5sums;
  };
  std::string canonical(const std::string& path, bool follow_last) const;
  void add_member(std::size_t index, const debian::DataMember& m, const debian::ReadData& read,
                  const std::set<std::string>& conffiles, std::set<std::string>& shipped_regular);
  void check_kept_directory(const std::string& what, const debian::DataMember& m, const std::string& canon) const;
  void stage_file(Package& pk, const debian::DataMember& m, const debian::ReadData& read, const std::string& canon,
                  const std::set<std::string>& conffiles, std::set<std::string>& shipped_regular, layers::Entry& e);
  bool take_over(std::size_t index, const std::string& shown, const std::string& canon);
  void add_record(const std::string& path, const std::string& content, std::uint32_t mode);
  void check_parents() const;
  struct LoaderDirs {
    std::vector<std::string> dirs;                                     // in the loader's order
    std::map<std::string, std::pair<std::size_t, std::string>> listed; // canonical -> place, name
  };
  LoaderDirs loader_dirs() const;
  debian::LdCache base_ld_cache() const;
  std::vector<debian::LdCacheEntry> layer_libraries(const LoaderDirs& dirs,
                                                    std::vector<std::pair<std::string, std::string>>& links) const;
  std::vector<debian::LdCacheEntry> merge_ld_entries(std::vector<debian::LdCacheEntry> base,
                                                     const std::vector<debian::LdCacheEntry>& added,
                                                     const LoaderDirs& dirs) const;
  void update_ld_cache(const std::function<void(const std::string&)>& info);

  const layers::BaseView& m_landing;
  std::string m_status, m_architecture;
  std::filesystem::path m_staging;
  debian::Database m_db;
  int m_counter = 0;
  std::vector<Package> m_packages;
  std::map<std::string, layers::Entry> m_entries; // by the path shipped (after a diversion: its target)
  std::map<std::string, std::string> m_canonical; // entry path -> where it lands in the tree
  struct Owned {
    std::size_t index = 0; // the package
    std::string entry;     // its entry's path (a diversion's target when diverted)
    std::string listed;    // the path as its .list records it
    char type = '0';
  };
  std::map<std::string, Owned> m_owner;             // canonical path of a non-directory -> who ships it
  std::map<std::string, std::string> m_shipper;     // entry path -> package name
  std::vector<std::string> m_taken;                 // "/usr/bin/x from OLD to NEW": files taken over from the base
  std::map<std::string, std::size_t> m_dirs;        // canonical directories the layer ships -> package index
  std::map<std::string, std::string> m_loader_conf; // etc/ld.so.conf(.d) files the layer ships
  bool m_ldconfig = false;
};

} // namespace builder
