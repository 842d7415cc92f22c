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

// The status paragraph for an installed package as dpkg records it: its control fields
// with "Status: install ok installed" after Package, the index-only fields (Filename,
// Size, MD5sum, SHA1, SHA256, SHA512, MSDOS-Filename, Description-md5) dropped, and
// Conffiles (" /etc/x MD5" lines, from the conffiles member) before Description when it
// has conffiles. Error(input) naming `what` and the field for a field dpkg writes itself
// (Status, Conffiles, Config-Version, Triggers-Pending, Triggers-Awaited).
Paragraph status_paragraph(const Paragraph& control, const std::vector<std::pair<std::string, std::string>>& conffiles,
                           const std::string& what);

// The base's status with `added` in: every paragraph sorted by (Package, Architecture)
// as dpkg keeps the file, the base's as they were.
std::string merged_status(const std::string& base_status, const std::vector<Paragraph>& added);

// The files of var/lib/dpkg/info for a package: name -> content (NAME.list from
// `paths`, the image paths in archive order; the control members dpkg keeps).
std::vector<std::pair<std::string, std::string>> info_files(const DebControl& deb,
                                                            const std::vector<std::string>& paths);

// What a package's scripts and triggers ask for that the layer does itself.
struct MaintainerSteps {
  bool ldconfig = false; // a bare `ldconfig` line, dh_makeshlibs' section, or `activate[-noawait] ldconfig`
};

// Refuses (Error(input), naming `what`, the script, its line and the reason) a package
// whose preinst, postinst or debconf config script does anything a fresh install by a
// debs layer leaves out: accepted are blank lines, comments, `set -e`, `exit 0`, a bare
// `ldconfig`, and debhelper's generated sections for ldconfig and for
// dpkg-maintscript-helper's conffile and directory moves (no-ops on a first install);
// a script in another language than the shell is refused. Its triggers file may only
// activate `ldconfig` (any other activation or interest is refused naming the line).
// prerm and postrm run on removal only and are kept.
MaintainerSteps check_maintainer_scripts(const DebControl& deb, const std::string& what);

// The conffiles a package declares ("/etc/x" lines of its conffiles member).
std::vector<std::string> conffile_paths(const DebControl& deb);

} // namespace debian
