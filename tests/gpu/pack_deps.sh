#!/usr/bin/env bash
# scripts/gpu-check.sh --pack-deps DIR: on a Debian dev machine (scripts/install-deps.sh done),
# copies the build dependencies of ddp-launch and its tests (the Boost headers they include,
# CLI11, fmt, nlohmann-json, Catch2 v2, gloo's headers, OpenSSL's headers and libraries) into
# DIR with small CMake package configs (fmt as header-only fmt::fmt), so a GPU machine without
# these packages and without network can build everything: carry DIR and point GPU_CHECK_DEPS
# at it (default build-gpu-deps/).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../../scripts/lib.sh
source "$(dirname "$0")/../../scripts/lib.sh"
cd "$repo_root"
dest=${1:?usage: pack_deps.sh DIR}
mkdir -p "$dest/include" "$dest/lib/cmake"
dest=$(cd "$dest" && pwd)

# Every Boost header the launcher, the store and the tests include (the compiler's closure).
mapfile -t sources < <(git ls-files 'launcher/*.cpp' 'tests/*.cpp' | grep -v -e '^tests/runtime/' -e '^tests/gpu/')
# shellcheck disable=SC1003,SC2020  # tr maps the blanks and backslashes of make's rules to newlines
for f in "${sources[@]}"; do c++ -std=c++17 -I. -Ilauncher -M "$f" 2>/dev/null || true; done |
  tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u | while read -r h; do
    mkdir -p "$dest/include/$(dirname "${h#/usr/include/}")"
    cp "$h" "$dest/include/${h#/usr/include/}"
  done
for d in CLI fmt nlohmann catch2 gloo; do cp -r "/usr/include/$d" "$dest/include/"; done  # gloo: pip's torch has none
# OpenSSL (the etcd client's TLS): its headers and libraries, for FindOpenSSL through
# OPENSSL_ROOT_DIR=DIR where the GPU machine has the runtime libraries but no headers; the
# binaries then find DIR/lib through their build RPATH.
multiarch=$(gcc -print-multiarch)
cp -r /usr/include/openssl "$dest/include/"
cp /usr/include/"$multiarch"/openssl/*.h "$dest/include/openssl/"
mkdir -p "$dest/lib"
for l in ssl crypto; do
  cp -L "/usr/lib/$multiarch/lib$l.so.3" "$dest/lib/"
  ln -sf "lib$l.so.3" "$dest/lib/lib$l.so"
done

# config NAME VERSION TARGET [DEFINITIONS]: an INTERFACE target over DIR/include.
config() {
  mkdir -p "$dest/lib/cmake/$1"
  cat >"$dest/lib/cmake/$1/$1Config.cmake" <<CFG
get_filename_component(_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET $3)
  add_library($3 INTERFACE IMPORTED)
  set_target_properties($3 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${_prefix}/include"
    INTERFACE_COMPILE_DEFINITIONS "${4:-}")
endif()
set(${1}_INCLUDE_DIRS "\${_prefix}/include")
set(${1}_FOUND TRUE)
CFG
  cat >"$dest/lib/cmake/$1/$1ConfigVersion.cmake" <<CFG
set(PACKAGE_VERSION "$2")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION_MAJOR AND NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "${2%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
CFG
}
boost=$(sed -n 's/^#define BOOST_LIB_VERSION "\(.*\)"/\1/p' /usr/include/boost/version.hpp | tr _ .)
config Boost "$boost.0" Boost::boost
echo 'if(NOT TARGET Boost::headers)
  add_library(Boost::headers ALIAS Boost::boost)
endif()' >>"$dest/lib/cmake/Boost/BoostConfig.cmake"
config CLI11 "$(sed -n 's/^#define CLI11_VERSION "\(.*\)"/\1/p' /usr/include/CLI/Version.hpp)" CLI11::CLI11
config fmt "$(sed -n 's/^#define FMT_VERSION \([0-9]*\)/\1/p' /usr/include/fmt/core.h | awk '{print int($1/10000) "." int($1/100)%100 "." $1%100}')" fmt::fmt FMT_HEADER_ONLY=1
config nlohmann_json "3.0.0" nlohmann_json::nlohmann_json
config Catch2 "2.13.0" Catch2::Catch2
cp /usr/lib/cmake/Catch2/Catch.cmake /usr/lib/cmake/Catch2/CatchAddTests.cmake "$dest/lib/cmake/Catch2/"
# shellcheck disable=SC2016  # written for CMake to expand
echo 'list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")' >>"$dest/lib/cmake/Catch2/Catch2Config.cmake"
echo "pack-deps: $(du -sh "$dest" | cut -f1) in $dest (Boost $boost headers used, CLI11, fmt, nlohmann-json, Catch2, gloo, OpenSSL)"
