# SPDX-License-Identifier: Apache-2.0
# CPack: `cpack -G DEB` in the build directory makes sealrun_<version>_<arch>.deb from the install
# rules (controller/cli/CMakeLists.txt: bin/sealrun, the man page, the bash completion, the example).
# Its Depends are the shared libraries' packages, computed by dpkg-shlibdeps from the executable,
# plus bubblewrap (the default containment mechanism, run as a program); rootless podman and what
# it needs are Recommends, since bubblewrap alone is a complete sandbox.
include(GNUInstallDirs)
# `cmake --install` and `cpack` package what was built, and do not first build every target (the
# tests and benchmarks included): a packager builds what they package, and a cpack run (as the
# packaging tests do, while other tests run) must not start a second build in the same tree.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# What a site installs for CI (docs/ci.md), and the documentation.
install(FILES ${CMAKE_SOURCE_DIR}/contrib/ci/buildbot/master.cfg
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/sealrun/buildbot)
# The web UI master.cfg registers where Buildbot's own (buildbot-www) is not installed.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/contrib/ci/buildbot/sealrun_www
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/sealrun/buildbot PATTERN __pycache__ EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/contrib/ci/gitlab/custom-executor/
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/sealrun/gitlab-executor USE_SOURCE_PERMISSIONS)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Apache-2.0 (LICENSE): whoever receives the package receives the licence with it (section 4a).
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(SEALRUN_DEB_MAINTAINER "sealrun maintainers <sealrun@invalid>"
    CACHE STRING "Maintainer field of the .deb made by cpack -G DEB")

set(CPACK_PACKAGE_NAME sealrun)
set(CPACK_PACKAGE_VENDOR sealrun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "hermetic, sandboxed build/run controller with provable receipts")
set(CPACK_PACKAGE_CONTACT "${SEALRUN_DEB_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)  # else CMake's own is shown
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the debug info of a RelWithDebInfo build stays in the build tree

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SEALRUN_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The extended description; CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY before it as the synopsis.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "sealrun runs a build job only after verifying the SHA-256 pins of its admission: source,
toolchain, container image and host tools. The job runs contained (bubblewrap or rootless
podman: no network, no capabilities, seccomp, read-only source) in a memory-limited resource
group while a census thread watches disk growth, and every run ends with a bounded, digested
receipt of what ran, how it was stopped and what was cleaned up.")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libsystemd0 by hand too: the systemd resource-group back end dlopen()s it on first use
# (containment/resgroup/sd_bus_library.h), so dpkg-shlibdeps no longer sees it; 237 is the oldest
# version with every sd_bus_* function it resolves (sd_bus_match_signal, per libsystemd0.symbols).
# libssl3 by hand for the same reason: libcrypto.so.3 is dlopen()ed by the first command that
# hashes or signs (core/crypto_library.h). 3.0.0 is what dpkg-shlibdeps computed while it was
# linked (libssl3.symbols: every function sealrun resolves is there since 3.0.0).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "bubblewrap, libsystemd0 (>= 237), libssl3 (>= 3.0.0)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "podman, runc, uidmap, git")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "build-essential")

include(CPack)
