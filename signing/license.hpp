#pragma once
// A Debian package's declared license, from its machine-readable copyright file
// (copyright-format 1.0, "DEP-5", /usr/share/doc/PKG/copyright): the license of the
// "Files: *" paragraph as an SPDX expression. The release's SBOMs declare the bundled
// and depended-on packages' licenses with it (builder/release_supply_chain.cpp); its
// LicenseRef ids are SPDX idstrings (spdx_idstring, provenance.hpp).
#include <map>
#include <string>

namespace signing {

// A license the expression names that SPDX has no identifier for: LicenseRef-NAME, its
// text from the file's stand-alone License paragraph (SPDX hasExtractedLicensingInfos).
struct ExtractedLicense {
  std::string id; // "LicenseRef-..."
  std::string name;
  std::string text;
};

// The SPDX expression for `copyright` (the file's text) of `package`: DEP-5 short names
// mapped to SPDX identifiers ("Expat" -> MIT, "GPL-2+" -> GPL-2.0-or-later), "A, B"
// read as "A AND B", other names as LicenseRef-NAME added to `extracted` (one id per
// distinct text: a name whose text differs between packages gets the package's name as
// a suffix). NOASSERTION when the file is not machine-readable, has no "Files: *"
// paragraph with a License, or that license is prose rather than a name.
std::string dep5_license(const std::string& copyright, const std::string& package,
                         std::map<std::string, ExtractedLicense>& extracted);

} // namespace signing
