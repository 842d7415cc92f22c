#pragma once
// Wheel compatibility tags (PEP 425 / the platform compatibility tags spec) in pip's
// order of preference, so that among several wheels of one release the one pip would
// install is chosen.
#include "python/wheel.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace python {

// Platform tags of a CPython target on Linux glibc, most specific first: for each
// glibc minor from the target's down to 2.17 (2.5 on x86_64 and i686)
// manylinux_2_<minor>_<arch>, each legacy alias right after the tag it stands for
// (manylinux2014 = 2.17, manylinux2010 = 2.12, manylinux1 = 2.5), then linux_<arch>.
// manylinux tags only for the architectures packaging gives them (x86_64, i686,
// aarch64, armv7l, ppc64, ppc64le, s390x, riscv64, loongarch64); armv8l also accepts
// armv7l. musllinux never appears: these images are glibc.
//
// An unknown glibc counts as 2.17: every glibc distribution still in use has at least
// that, so manylinux2014 wheels (what most projects publish) rank as usual, while a
// wheel needing a newer glibc is not picked on a guess. incompatibility() does not
// check manylinux at all in that case, so such a wheel gets no rank from tag_rank.
std::vector<std::string> platform_tags(const PythonTarget& target);

// The interpreter/ABI/platform tags the target accepts, most preferred first, in the
// order packaging.tags.sys_tags gives for CPython: cpXY-cpXY-<plat>, cpXY-abi3-<plat>,
// cpXY-none-<plat>, cp3(Y-1)..cp32-abi3-<plat>, then pyXY, py3, py3(Y-1)..py30 with
// none-<plat>, then cpXY-none-any, pyXY-none-any, py3-none-any, py3(Y-1)..py30-none-any.
// The ABI is cpXY from 3.8 on and cpXYm before (release builds with pymalloc).
std::vector<std::string> supported_tags(const PythonTarget& target);

// The best (lowest) index in `supported` of any tag the wheel's compressed tag set
// expands to; nullopt if none. Tags compare case-insensitively. A wheel
// incompatibility() accepts gets a rank except for tag combinations pip does not
// install either: an ABI other than the release build's (cpXYd, or cpXYm on 3.8+, cpXY
// before 3.8), cpXY-none or cpX-none for another XY, and manylinux tags above 2.17 when
// glibc is unknown.
std::optional<std::size_t> tag_rank(const WheelName& wheel, const std::vector<std::string>& supported);

} // namespace python
