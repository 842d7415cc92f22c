#!/usr/bin/env python3
"""The release's SBOMs and provenance predicate, for scripts/release.sh.

  release_supply_chain.py facts --bin BIN --build DIR --repository URL --epoch N --glibc-min V -o OUT -- COMMAND...
  release_supply_chain.py sbom-archive --archive DIST/NAME.tar.gz --libs LIBS.tsv --facts FACTS.json -o OUT
  release_supply_chain.py sbom-deb --deb DIST/NAME.deb --facts FACTS.json -o OUT
  release_supply_chain.py provenance --libs LIBS.tsv --facts FACTS.json -o OUT

sbom-archive: an SPDX 2.3 JSON document describing the archive: paddle-image (its
version, source repository and commit, the archive's SHA-256) and every library the
archive bundles under lib/, each as the Debian package it came from (name, version,
purl pkg:deb/debian/PKG@VERSION?arch=ARCH&distro=debian-12, the license its DEP-5
copyright file declares) containing the file as bundled (SHA-1 and SHA-256 read from
the archive itself).
sbom-deb: the .deb: paddle-image and each package of its Depends, DEPENDS_ON, at the
version installed where the release was made.
provenance: the SLSA v1 provenance predicate of the release (release.sh has
`paddle-image attest-blob` put it in a signed in-toto statement whose subjects are the
release files).

LIBS.tsv: one bundled library a line: SONAME, Debian package ("" if none), version,
architecture (tab-separated). FACTS.json (`facts`): what the release was made from and
with: paddle-image's version and commit (from `BIN version --json`), the repository,
SOURCE_DATE_EPOCH, the command, the release build's CMake settings, the tools' versions
and the OS. Nothing here reads the clock or the host name: equal inputs give equal bytes (times from SOURCE_DATE_EPOCH,
document namespaces from the described file's SHA-256).
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.parse
import uuid

SPDX_NS = "https://paddle-image.dev/spdxdocs/"
BUILD_TYPE = "https://paddle-image.dev/buildtypes/release/v1"
BUILDER_ID = "https://paddle-image.dev/release/scripts/release.sh"

# DEP-5 short license names (copyright-format 1.0, "License Specification") and the
# SPDX identifiers they stand for; a name SPDX also uses is itself.
DEP5_TO_SPDX = {
    "expat": "MIT", "mit": "MIT", "x11": "X11", "isc": "ISC", "zlib": "Zlib", "curl": "curl",
    "openssl": "OpenSSL", "ssleay": "SSLeay-standalone", "apache-2.0": "Apache-2.0", "apache-2": "Apache-2.0",
    "bsd-2-clause": "BSD-2-Clause", "bsd-3-clause": "BSD-3-Clause", "bsd-4-clause": "BSD-4-Clause",
    "mpl-1.1": "MPL-1.1", "mpl-2.0": "MPL-2.0", "cc0-1.0": "CC0-1.0", "cc0": "CC0-1.0",
    "artistic": "Artistic-1.0-Perl", "unicode-dfs-2016": "Unicode-DFS-2016", "icu": "ICU",
    "gpl-1": "GPL-1.0-only", "gpl-1+": "GPL-1.0-or-later", "gpl-2": "GPL-2.0-only", "gpl-2+": "GPL-2.0-or-later",
    "gpl-3": "GPL-3.0-only", "gpl-3+": "GPL-3.0-or-later", "lgpl-2": "LGPL-2.0-only",
    "lgpl-2+": "LGPL-2.0-or-later", "lgpl-2.1": "LGPL-2.1-only", "lgpl-2.1+": "LGPL-2.1-or-later",
    "lgpl-3": "LGPL-3.0-only", "lgpl-3+": "LGPL-3.0-or-later", "gfdl-1.2+": "GFDL-1.2-or-later",
    "gfdl-1.3+": "GFDL-1.3-or-later", "bsl-1.0": "BSL-1.0", "psf-2": "PSF-2.0", "python-2.0": "Python-2.0",
}


def die(msg):
    sys.stderr.write("release_supply_chain.py: %s\n" % msg)
    sys.exit(1)


def rfc3339(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pct(text):
    # purl-spec: percent-encode what is not unreserved ('+' -> %2B, ':' -> %3A), as
    # paddle-image's own purls (layers::purl) do.
    return urllib.parse.quote(text, safe="-._~")


def deb_purl(name, version, arch, distro):
    return "pkg:deb/debian/%s@%s?arch=%s&distro=%s" % (pct(name), pct(version), pct(arch), pct(distro))


def spdx_id(prefix, text):
    return "SPDXRef-%s-%s" % (prefix, re.sub(r"[^A-Za-z0-9.-]", "-", text))


def load_libs(path):
    libs = []
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            soname, pkg, version, arch = (line.rstrip("\n").split("\t") + ["", "", ""])[:4]
            libs.append({"soname": soname, "package": pkg, "version": version, "arch": arch or "amd64"})
    return libs


# --- licenses: the DEP-5 copyright file's "Files: *" paragraph -----------------------


def dep5_paragraphs(text):
    """The paragraphs of a machine-readable copyright file as (fields, first lines)
    dicts: field name (lower case) -> (first line, continuation text)."""
    paragraphs, cur, last = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                paragraphs.append(cur)
            cur, last = {}, None
        elif line[0] in " \t":
            if last is not None:
                first, rest = cur[last]
                cur[last] = (first, rest + line.strip() + "\n")
        elif ":" in line:
            key, _, value = line.partition(":")
            last = key.strip().lower()
            cur[last] = (value.strip(), "")
    if cur:
        paragraphs.append(cur)
    return paragraphs


def license_of(pkg, extracted):
    """The SPDX license expression the package's copyright file declares for "Files: *",
    or NOASSERTION when the file is not machine-readable (DEP-5) or says nothing usable.
    Names SPDX does not know become LicenseRef-NAME, their text added to `extracted`."""
    path = "/usr/share/doc/%s/copyright" % pkg
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return "NOASSERTION"
    if not re.match(r"Format:\s*https?://www\.debian\.org/doc/packaging-manuals/copyright-format/1\.0/?", text):
        return "NOASSERTION"
    paragraphs = dep5_paragraphs(text)
    files_star = [p for p in paragraphs if "files" in p and p["files"][0].split() and p["files"][0].split()[0] == "*"]
    if not files_star or "license" not in files_star[0] or not files_star[0]["license"][0]:
        return "NOASSERTION"
    expr = files_star[0]["license"][0]
    standalone = {p["license"][0]: p["license"][1] for p in paragraphs if "license" in p and "files" not in p}
    out = []
    for token in re.split(r"\s+(or|and)\s+|\s*,\s*(?:and\s+)?", expr, flags=re.IGNORECASE):
        if token is None or not token.strip():
            continue
        low = token.strip().lower()
        if low in ("or", "and"):
            out.append(low.upper())
            continue
        if out and out[-1] not in ("OR", "AND"):
            out.append("AND")  # "A, B": both apply
        name = token.strip()
        if low in DEP5_TO_SPDX:
            out.append(DEP5_TO_SPDX[low])
            continue
        if " " in name and not re.fullmatch(r"[A-Za-z0-9.+-]+ with [A-Za-z0-9.+-]+ exception", name, re.I):
            return "NOASSERTION"  # prose, not a license name
        ref = "LicenseRef-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)
        body = standalone.get(name, "").strip() or ("The license named '%s' in %s's Debian copyright file" % (name, pkg))
        if ref in extracted and extracted[ref]["extractedText"] != body:
            ref += "-" + re.sub(r"[^A-Za-z0-9.-]", "-", pkg)
        extracted.setdefault(ref, {"licenseId": ref, "name": name, "extractedText": body})
        out.append(ref)
    while out and out[-1] in ("OR", "AND"):
        out.pop()
    return " ".join(out) if out else "NOASSERTION"


# --- documents ------------------------------------------------------------------------


def document(name, described_sha256, facts, packages, relationships, files=None, extracted=None):
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": name,
        # From the file it describes: another file, another namespace; the same bytes,
        # the same document.
        "documentNamespace": SPDX_NS + name + "-" + str(uuid.uuid5(uuid.NAMESPACE_URL, "sha256:" + described_sha256)),
        "creationInfo": {
            "created": rfc3339(facts["epoch"]),
            "creators": ["Tool: paddle-image-release.sh-" + facts["version"], "Organization: paddle-image"],
        },
        "packages": packages,
    }
    if files:
        doc["files"] = files
    if extracted:
        doc["hasExtractedLicensingInfos"] = [extracted[k] for k in sorted(extracted)]
    doc["relationships"] = [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                             "relatedSpdxElement": packages[0]["SPDXID"]}] + relationships
    return doc


def source_purl(facts):
    m = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", facts["repository"])
    if m:
        return "pkg:github/%s/%s@%s" % (pct(m.group(1)), pct(m.group(2)), pct(facts["version"]))
    return "pkg:generic/paddle-image@%s?vcs_url=%s" % (pct(facts["version"]), pct("git+" + facts["repository"]))


def paddle_image_package(facts, spdxid, file_name, sha256, version, purls, comment):
    commit = facts["commit"] or "unknown"
    return {
        "SPDXID": spdxid,
        "name": "paddle-image",
        "versionInfo": version,
        "packageFileName": file_name,
        "supplier": "Organization: paddle-image",
        "downloadLocation": "git+%s@%s" % (facts["repository"], commit) if facts["commit"] else "NOASSERTION",
        "sourceInfo": "built from git commit %s%s of %s" % (
            commit, " with uncommitted changes" if facts["dirty"] else "", facts["repository"]),
        "filesAnalyzed": False,
        "checksums": [{"algorithm": "SHA256", "checksumValue": sha256}],
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",  # COPYRIGHT states the terms; they have no SPDX identifier
        "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "APPLICATION",
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl", "referenceLocator": p}
                         for p in purls],
        "comment": comment,
    }


def deb_package(name, version, arch, facts, extracted, comment):
    return {
        "SPDXID": spdx_id("Package-deb", name),
        "name": name,
        "versionInfo": version,
        "supplier": "Organization: Debian",
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": license_of(name, extracted),
        "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "LIBRARY",
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                          "referenceLocator": deb_purl(name, version, arch, facts["os"]["distro"])}],
        "comment": comment,
    }


def archive_members(archive, sonames):
    """SHA-1 and SHA-256 of NAME/lib/SONAME as the archive holds them."""
    out = {}
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            parts = m.name.split("/")
            if m.isfile() and len(parts) == 3 and parts[1] == "lib" and parts[2] in sonames:
                data = tar.extractfile(m).read()
                out[parts[2]] = (m.name, hashlib.sha1(data).hexdigest(), hashlib.sha256(data).hexdigest())
    return out


def cmd_sbom_archive(args, facts):
    libs = load_libs(args.libs)
    name = os.path.basename(args.archive)
    sha = sha256_file(args.archive)
    members = archive_members(args.archive, {lib["soname"] for lib in libs})
    missing = sorted({lib["soname"] for lib in libs} - set(members))
    if missing:
        die("%s lacks lib/%s, which release.sh bundled" % (args.archive, ", lib/".join(missing)))
    main = paddle_image_package(facts, "SPDXRef-Package-paddle-image", name, sha, facts["version"],
                                [source_purl(facts)],
                                "The self-contained archive: libexec/paddle-image and the libraries it loads beyond "
                                "glibc %s or later, under lib/" % facts["glibc_min"])
    packages, files, rels, extracted, seen = [main], [], [], {}, {}
    for lib in libs:
        member, sha1, sha256 = members[lib["soname"]]
        fid = spdx_id("File-lib", lib["soname"])
        files.append({"SPDXID": fid, "fileName": "./" + member.split("/", 1)[1],
                      "checksums": [{"algorithm": "SHA1", "checksumValue": sha1},
                                    {"algorithm": "SHA256", "checksumValue": sha256}],
                      "fileTypes": ["BINARY"], "licenseConcluded": "NOASSERTION", "copyrightText": "NOASSERTION"})
        if not lib["package"]:
            rels.append({"spdxElementId": main["SPDXID"], "relationshipType": "CONTAINS", "relatedSpdxElement": fid})
            continue
        if lib["package"] not in seen:
            pkg = deb_package(lib["package"], lib["version"], lib["arch"], facts, extracted,
                              "bundled from the Debian package installed where the release was made")
            seen[lib["package"]] = pkg
            packages.append(pkg)
            rels.append({"spdxElementId": main["SPDXID"], "relationshipType": "CONTAINS",
                         "relatedSpdxElement": pkg["SPDXID"]})
        rels.append({"spdxElementId": seen[lib["package"]]["SPDXID"], "relationshipType": "CONTAINS",
                     "relatedSpdxElement": fid})
    for pkg in packages[1:]:
        pkg["comment"] = "bundled as " + ", ".join(
            "lib/" + lib["soname"] for lib in libs if lib["package"] == pkg["name"]) + \
            " (from the Debian package installed where the release was made)"
    write_json(args.output, document(name, sha, facts, packages, rels, files, extracted))


def parse_depends(text):
    """[(package, relation text)] of a Depends field; the first of alternatives."""
    out = []
    for clause in text.split(","):
        first = clause.split("|")[0].strip()
        m = re.match(r"([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*(\(.*\))?", first)
        if m:
            out.append((m.group(1), first))
    return out


def dpkg_field(path, field):
    return subprocess.run(["dpkg-deb", "-f", path, field], check=True, capture_output=True, text=True).stdout.strip()


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}\t${Architecture}", pkg], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0 or "\t" not in r.stdout:
        return None, None
    version, arch = r.stdout.split("\t", 1)
    return version, arch


def cmd_sbom_deb(args, facts):
    name = os.path.basename(args.deb)
    sha = sha256_file(args.deb)
    version, arch = dpkg_field(args.deb, "Version"), dpkg_field(args.deb, "Architecture")
    purls = ["pkg:deb/paddle-image/paddle-image@%s?arch=%s" % (pct(version), pct(arch)), source_purl(facts)]
    main = paddle_image_package(facts, "SPDXRef-Package-paddle-image", name, sha, version, purls,
                                "The Debian package: /usr/bin/paddle-image on Debian's libraries (Depends)")
    packages, rels, extracted = [main], [], {}
    for dep, relation in parse_depends(dpkg_field(args.deb, "Depends")):
        have, dep_arch = installed(dep)
        if have is None:
            die("%s depends on %s, which is not installed here (dpkg-query -W %s)" % (name, dep, dep))
        pkg = deb_package(dep, have, dep_arch, facts, extracted,
                          "Depends: %s; the version installed where the release was made" % relation)
        pkg["primaryPackagePurpose"] = "LIBRARY"
        packages.append(pkg)
        rels.append({"spdxElementId": main["SPDXID"], "relationshipType": "DEPENDS_ON",
                     "relatedSpdxElement": pkg["SPDXID"]})
    write_json(args.output, document(name, sha, facts, packages, rels, None, extracted))


def cmd_provenance(args, facts):
    libs = load_libs(args.libs)
    source = {"uri": "git+" + facts["repository"], "digest": {"gitCommit": facts["commit"]} if facts["commit"] else {},
              "annotations": {"dirty": facts["dirty"]}}
    if not source["digest"]:
        del source["digest"]
    deps, seen = [source], set()
    for lib in libs:
        if lib["package"] and lib["package"] not in seen:
            seen.add(lib["package"])
            deps.append({"name": lib["package"],
                         "uri": deb_purl(lib["package"], lib["version"], lib["arch"], facts["os"]["distro"]),
                         "annotations": {"version": lib["version"], "bundled": sorted(
                             "lib/" + x["soname"] for x in libs if x["package"] == lib["package"])}})
    when = rfc3339(facts["epoch"])
    predicate = {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "source": {"repository": facts["repository"], "commit": facts["commit"], "dirty": facts["dirty"]},
                "command": facts["command"],
                "source_date_epoch": int(facts["epoch"]),
            },
            "internalParameters": {
                "cmake": facts["cmake_options"],
                "glibc_min": facts["glibc_min"],
            },
            "resolvedDependencies": deps,
        },
        "runDetails": {
            "builder": {"id": BUILDER_ID, "version": facts["tools"]},
            # The times are SOURCE_DATE_EPOCH's (the commit's), not the clock's: the
            # same commit gives the same provenance.
            "metadata": {"invocationId": "%s@%s" % (facts["repository"], facts["commit"] or "unknown"),
                         "startedOn": when, "finishedOn": when},
        },
    }
    write_json(args.output, predicate)


def first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError:
        return None
    lines = (r.stdout or r.stderr).strip().splitlines()
    return lines[0].strip() if r.returncode == 0 and lines else None


def deb_version(pkg):
    return installed(pkg)[0]


def os_release():
    fields = {}
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        if os.path.exists(path):
            for line in open(path):
                key, sep, value = line.strip().partition("=")
                if sep:
                    fields[key] = value.strip().strip('"').strip("'")
            break
    return fields


def cmake_cache(build):
    """The settings of the release build that shape the binary, from CMakeCache.txt."""
    wanted = ("CMAKE_BUILD_TYPE", "CMAKE_GENERATOR", "CMAKE_CXX_COMPILER", "PADDLE_IMAGE_BUNDLE_RPATH",
              "PADDLE_IMAGE_WERROR", "PADDLE_IMAGE_TESTS", "PADDLE_IMAGE_SANITIZE")
    out = {}
    try:
        for line in open(os.path.join(build, "CMakeCache.txt")):
            m = re.match(r"([A-Za-z_]+):[A-Z]+=(.*)$", line.rstrip("\n"))
            if m and m.group(1) in wanted:
                out[m.group(1)] = m.group(2)
    except OSError:
        die("%s has no CMakeCache.txt" % build)
    return out


def cmd_facts(args, _facts):
    """What the release was made from and with, as one JSON object (FACTS.json)."""
    info = json.loads(subprocess.run([args.bin, "version", "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    osr = os_release()
    tools = {"paddle-image": info["version"], "compiler": info.get("compiler", "")}
    for name, argv in (("cmake", ["cmake", "--version"]), ("ninja", ["ninja", "--version"]),
                       ("gcc", ["gcc", "-dumpfullversion"]), ("g++", ["g++", "-dumpfullversion"]),
                       ("tar", ["tar", "--version"]), ("gzip", ["gzip", "--version"]),
                       ("python3", ["python3", "--version"])):
        line = first_line(argv)
        if line:
            tools[name] = re.sub(r"^(cmake version|tar \(GNU tar\)|gzip|Python)\s+", "", line)
    for pkg in ("dpkg", "dpkg-dev", "binutils", "libc6"):
        v = deb_version(pkg)
        if v:
            tools[pkg] = v
    tools["os"] = osr.get("PRETTY_NAME", "unknown")
    facts = {
        "version": info["version"],
        "commit": info["git"].get("revision") or "",
        "dirty": bool(info["git"].get("dirty")),
        "repository": args.repository,
        "epoch": int(args.epoch),
        "glibc_min": args.glibc_min,
        "command": args.command_line,
        "cmake_options": cmake_cache(args.build),
        "tools": tools,
        "os": {"id": osr.get("ID", "debian"), "version_id": osr.get("VERSION_ID", ""),
               "distro": "%s-%s" % (osr.get("ID", "debian"), osr.get("VERSION_ID", "")) if osr.get("VERSION_ID")
               else osr.get("ID", "debian")},
    }
    write_json(args.output, facts)


def write_json(path, doc):
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("facts")
    p.add_argument("--bin", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--repository", required=True)
    p.add_argument("--epoch", required=True)
    p.add_argument("--glibc-min", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("command_line", nargs="*")
    p = sub.add_parser("sbom-archive")
    p.add_argument("--archive", required=True)
    p.add_argument("--libs", required=True)
    p.add_argument("--facts", required=True)
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("sbom-deb")
    p.add_argument("--deb", required=True)
    p.add_argument("--facts", required=True)
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("provenance")
    p.add_argument("--libs", required=True)
    p.add_argument("--facts", required=True)
    p.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    facts = None
    if args.command != "facts":
        with open(args.facts) as f:
            facts = json.load(f)
    {"facts": cmd_facts, "sbom-archive": cmd_sbom_archive, "sbom-deb": cmd_sbom_deb, "provenance": cmd_provenance}[args.command](
        args, facts)


if __name__ == "__main__":
    main()
