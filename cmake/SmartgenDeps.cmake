# Every dependency is a Debian package installed by scripts/setup.sh. A missing one stops the
# configure step with the package to install, never silently disables a feature.

function(smartgen_require_package found pkg)
  if(NOT ${found})
    message(FATAL_ERROR "smartgen: missing dependency; install the Debian package '${pkg}' "
                        "(scripts/setup.sh does this)")
  endif()
endfunction()

find_package(Threads REQUIRED)
find_package(fmt QUIET)
smartgen_require_package(fmt_FOUND libfmt-dev)
find_package(nlohmann_json QUIET)
smartgen_require_package(nlohmann_json_FOUND nlohmann-json3-dev)
find_package(CLI11 QUIET)
smartgen_require_package(CLI11_FOUND libcli11-dev)

find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
smartgen_require_package(PCRE2_FOUND libpcre2-dev)
pkg_check_modules(XXHASH QUIET IMPORTED_TARGET libxxhash)
smartgen_require_package(XXHASH_FOUND libxxhash-dev)
pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
smartgen_require_package(UCX_FOUND libucx-dev)

# Debian's cpp-httplib is a compiled library (libcpp-httplib.so) whose classes change layout
# with the CPPHTTPLIB_*_SUPPORT macros it was built with; its pkg-config file carries them.
find_path(HTTPLIB_INCLUDE_DIR httplib.h)
pkg_check_modules(CPP_HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
if(HTTPLIB_INCLUDE_DIR AND CPP_HTTPLIB_FOUND)
  set(HTTPLIB_FOUND TRUE)
endif()
smartgen_require_package(HTTPLIB_FOUND libcpp-httplib-dev)

set(BLA_VENDOR OpenBLAS)
find_package(BLAS QUIET)
smartgen_require_package(BLAS_FOUND libopenblas-dev)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread)

if(SMARTGEN_BUILD_TESTS)
  find_package(GTest QUIET)
  smartgen_require_package(GTest_FOUND libgtest-dev)
  include(GoogleTest)
endif()
if(SMARTGEN_BUILD_BENCH)
  find_package(benchmark QUIET)
  smartgen_require_package(benchmark_FOUND libbenchmark-dev)
endif()
