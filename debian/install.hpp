#pragma once
// What installing a package leaves besides its files, written as dpkg writes it: the
// package's paragraph in var/lib/dpkg/status ("install ok installed", its conffiles
// with their MD5), and var/lib/dpkg/info/NAME.list, .md5sums, .conffiles, .triggers,
// .shlibs, .symbols and the maintainer scripts, so dpkg -l / -s / --verify, apt and
// scanners that read dpkg's database see the package as if apt had installed it. And
// the policy for maintainer scripts, which a debs layer never runs (docs/spec.md
// "Maintainer scripts").
#include "debian/deb.hpp"

#include <string>
#include <vector>

namespace debian {

// The name dpkg files a package's info under: "NAME", or "NAME:ARCH" for Multi-Arch: same.
std::string info_name(const Paragraph& control);

// The status paragraph for an installed package: its control fields with
// "Status: install ok installed" after Package, and Conffiles (" /etc/x MD5" lines)
// before Description when it has conffiles.
Paragraph status_paragraph(const Paragraph& control, const std::vector<std::pair<std::string, std::string>>& conffiles);

// The base's status with `added` in: every paragraph sorted by (Package, Architecture)
// as dpkg keeps the file, the base's as they were.
std::string merged_status(const std::string& base_status, const std::vector<Paragraph>& added);

// The files of var/lib/dpkg/info for a package: name -> content (NAME.list from
// `paths`, the image paths in archive order; the control members dpkg keeps).
std::vector<std::pair<std::string, std::string>> info_files(const DebControl& deb,
                                                            const std::vector<std::string>& paths);

// Refuses (Error(input), naming `what`, the script, its line and the reason) a package
// whose preinst or postinst does anything a fresh install by a debs layer leaves out:
// accepted are blank lines, comments, `set -e`, `exit 0`, and debhelper's generated
// sections for ldconfig and for dpkg-maintscript-helper's conffile and directory moves
// (no-ops on a first install). prerm and postrm run on removal only and are kept.
void check_maintainer_scripts(const DebControl& deb, const std::string& what);

// The conffiles a package declares ("/etc/x" lines of its conffiles member).
std::vector<std::string> conffile_paths(const DebControl& deb);

} // namespace debian
