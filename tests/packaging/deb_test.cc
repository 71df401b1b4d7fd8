// SPDX-License-Identifier: Apache-2.0
// `cpack -G DEB` (label packaging): the .deb declares its Debian dependencies and installs into a
// fresh Debian root, where /usr/bin/sealrun runs.
//
// The fresh root is a copy of the debootstrap fixture (tests/fixtures/systemd_root.sh: bookworm
// minbase + systemd). Installing there is real dpkg, in a chroot: first without sealrun's
// dependencies, which dpkg must refuse naming them (so the Depends field is really there); then
// with them, taken from this host's own installed packages by dpkg-repack (no network: the
// fixture has no apt lists and tests use none), after which dpkg configures sealrun and
// `sealrun --version` and `sealrun probe` run from /usr/bin inside the chroot. That proves the
// declared Depends suffice for the executable to load: a library it needs but does not declare is
// missing from the minbase root unless something else there pulled it in. The chroot runs in a
// private mount namespace (unshare -m), so its proc, sys and dev mounts vanish with it.
// (probe inside a chroot: the kernel refuses new user namespaces to a chrooted process, so
// bubblewrap reports itself unusable there; the test checks that probe ran and reported, as its
// exit 0 means.)
#include <gtest/gtest.h>

#include <string>

#include "tests/packaging/shell.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

// Makes the .deb from the build directory into `out`; returns its path.
std::string make_deb(const std::string& out) {
  auto c = shell("cpack -G DEB --config " + shell_quote(binary_dir() + "/CPackConfig.cmake") +
                     " -B " + shell_quote(out) +
                     " >cpack.log 2>&1 || { cat cpack.log; exit 1; }\n"
                     "ls " +
                     shell_quote(out) + "/sealrun_*.deb",
                 out.substr(0, out.rfind('/')));
  EXPECT_EQ(c.status.code, 0) << c.out << c.err;
  return c.out.substr(0, c.out.find('\n'));
}

std::string field(const std::string& deb, const std::string& name) {
  auto c = shell("dpkg-deb -f " + shell_quote(deb) + " " + name);
  EXPECT_EQ(c.status.code, 0) << c.err;
  return c.out;
}

TEST(Deb, DeclaresItsDependenciesAndMetadata) {
  TempDir dir;
  std::string deb = make_deb(dir / "pkg");
  ASSERT_FALSE(deb.empty());
  EXPECT_EQ(field(deb, "Package"), "sealrun\n");
  EXPECT_EQ(field(deb, "Version"), SEALRUN_VERSION "\n");
  std::string depends = field(deb, "Depends");
  // bubblewrap by hand; the libraries by dpkg-shlibdeps from the executable.
  for (const char* want : {"bubblewrap", "libc6", "libstdc++6", "libssl3", "libseccomp2", "libcap2",
                           "libsystemd0", "libfmt9"})
    EXPECT_NE(depends.find(want), std::string::npos) << want << " not in Depends: " << depends;
  std::string recommends = field(deb, "Recommends");
  for (const char* want : {"podman", "runc", "uidmap"})
    EXPECT_NE(recommends.find(want), std::string::npos) << want << " not in " << recommends;
  EXPECT_EQ(field(deb, "Section"), "devel\n");
  EXPECT_NE(field(deb, "Maintainer").find('@'), std::string::npos);
  EXPECT_NE(field(deb, "Description").find("hermetic, sandboxed build/run controller"),
            std::string::npos);
  auto contents = shell("dpkg-deb -c " + shell_quote(deb));
  for (const char* want :
       {"./usr/bin/sealrun", "./usr/share/man/man1/sealrun.1",
        "./usr/share/bash-completion/completions/sealrun",
        "./usr/share/sealrun/examples/hello/build.sh", "./usr/libexec/sealrun/sealrun-runner"})
    EXPECT_NE(contents.out.find(want), std::string::npos) << want << "\n" << contents.out;
}

TEST(Deb, InstallsIntoAFreshDebianRootAndRunsFromUsrBin) {
  std::string fixtures = binary_dir() + "/fixtures";
  auto fixture = shell("bash " + shell_quote(source_dir() + "/tests/fixtures/systemd_root.sh") +
                           " " + shell_quote(fixtures),
                       "", 600000);
  ASSERT_EQ(fixture.status.code, 0) << fixture.err;
  TempDir dir;
  std::string deb = make_deb(dir / "pkg");
  ASSERT_FALSE(deb.empty());
  std::string root = dir / "root";
  ASSERT_EQ(shell("cp -a " + shell_quote(fixtures + "/systemd-root") + " " + root +
                  "\n"
                  "rm -f " +
                  root +
                  "/.complete\n"
                  "mkdir -p " +
                  root + "/tmp/debs && cp " + shell_quote(deb) + " " + root + "/tmp/debs/")
                .status.code,
            0);
  std::string deb_in_root = "/tmp/debs/" + deb.substr(deb.rfind('/') + 1);
  // Everything that mounts runs in a private mount namespace.
  auto in_root = [&](const std::string& script) {
    return shell("unshare --mount --propagation private -- bash -euo pipefail -c " +
                     shell_quote("mount -t proc proc " + root + "/proc\nmount --rbind /sys " +
                                 root + "/sys\nmount --rbind /dev " + root + "/dev\n" + script),
                 dir.str());
  };

  // 1. Without its dependencies, dpkg unpacks but refuses to configure, naming what is missing.
  auto bare = in_root("chroot " + root + " dpkg -i " + deb_in_root + " 2>&1");
  EXPECT_NE(bare.status.code, 0);
  for (const char* missing : {"bubblewrap", "libfmt9"})
    EXPECT_NE(bare.out.find("Package " + std::string(missing) + " is not installed"),
              std::string::npos)
        << missing << "\n"
        << bare.out;

  // 2. The missing dependencies, from this host's installed packages, then sealrun configures.
  // The closure is transitive (the runner's gRPC libraries pull in abseil, re2, c-ares, ...): a
  // package the root lacks is repacked from the host and its own Depends and Pre-Depends are
  // followed; of alternatives the first one the host has is taken. (The loop that picks one stops
  // at the first: the writer before it may then die of SIGPIPE, which pipefail would turn into
  // the script's exit 141, hence `|| true` there. For the same reason no reader here stops before
  // the end of its input: `sed -n 1p`, not `head -n1`; `grep >/dev/null`, not `grep -q`.)
  const std::string deps_of =
      "deps_of() { sed -e 's/([^)]*)//g' -e 's/:any//g' | tr ',' '\\n' | while read -r alts; do\n"
      "  [ -n \"$alts\" ] || continue\n"
      "  pick=$(echo \"$alts\" | tr '|' '\\n' | tr -d ' ' | while read -r a; do\n"
      "    if dpkg-query -W -f='${Status}' \"$a\" 2>/dev/null | grep 'ok installed' >/dev/null;"
      " then echo \"$a\"; break; fi; done || true)\n"
      "  echo \"${pick:-$(echo \"$alts\" | cut -d'|' -f1 | tr -d ' ')}\"\n"
      "done; }\n";
  auto deps = in_root(
      deps_of + "cd " + root +
      "/tmp/debs\n"
      "queue=$(chroot " +
      root +
      " dpkg-query -W -f='${Depends}' sealrun | deps_of)\n"
      "seen=' '; first=''\n"
      "while [ -n \"$queue\" ]; do\n"
      "  p=$(echo \"$queue\" | sed -n 1p); queue=$(echo \"$queue\" | sed 1d)\n"
      "  case \"$seen\" in *\" $p \"*) continue;; esac; seen=\"$seen$p \"\n"
      "  chroot " +
      root +
      " dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | grep 'ok installed' >/dev/null && "
      "continue\n"
      "  dpkg-query -W \"$p\" >/dev/null 2>&1 || continue  # virtual: a provider comes along\n"
      "  first=\"$first $p\"; dpkg-repack \"$p\" >/dev/null\n"
      "  more=$(dpkg-query -W -f='${Depends},${Pre-Depends}' \"$p\" | deps_of)\n"
      "  queue=$(printf '%s\\n%s' \"$queue\" \"$more\" | sed '/^$/d')\n"
      "done\n"
      "echo \"missing:$first \"\n"
      "chroot " +
      root +
      " sh -c 'dpkg -i /tmp/debs/*.deb' >dpkg.log 2>&1 || { cat dpkg.log; exit 1; }\n"
      "chroot " +
      root + " dpkg-query -W -f='${Status}\\n' sealrun");
  ASSERT_EQ(deps.status.code, 0) << deps.out << deps.err;
  EXPECT_NE(deps.out.find("missing:"), std::string::npos) << deps.out;
  EXPECT_NE(deps.out.find(" bubblewrap "), std::string::npos) << deps.out;
  EXPECT_NE(deps.out.find("install ok installed"), std::string::npos) << deps.out;

  // 3. The installed executable runs from /usr/bin in the root.
  auto version = in_root("chroot " + root + " /usr/bin/sealrun --version");
  ASSERT_EQ(version.status.code, 0) << version.err;
  auto built = shell(shell_quote(sealrun_path()) + " --version");
  EXPECT_EQ(version.out, built.out);
  // libcrypto is dlopen()ed by a command that hashes, not linked: what makes it present in the
  // root is the hand-declared libssl3 (cmake/Packaging.cmake).
  auto hashed = in_root("chroot " + root + " /usr/bin/sealrun fingerprint file /usr/bin/sealrun");
  EXPECT_EQ(hashed.status.code, 0) << hashed.out << hashed.err;
  auto probe = in_root("chroot " + root + " /usr/bin/sealrun probe");
  EXPECT_EQ(probe.status.code, 0) << probe.out << probe.err;
  EXPECT_NE(probe.out.find("mechanism bwrap"), std::string::npos) << probe.out;
  EXPECT_NE(probe.out.find("resource groups:"), std::string::npos) << probe.out;
  // `sealrun runner` finds its helper in /usr/libexec/sealrun/, and the helper (gRPC and all)
  // loads with the declared Depends: its own check of --listen answers (exit 2).
  auto runner = in_root("chroot " + root +
                        " /usr/bin/sealrun runner --listen nowhere --build-dir /tmp --toolchain "
                        "/tmp 2>&1 && echo \"exit 0\" || echo \"exit $?\"");
  EXPECT_NE(runner.out.find("expected unix:PATH or HOST:PORT"), std::string::npos) << runner.out;
  EXPECT_NE(runner.out.find("exit 2"), std::string::npos) << runner.out;
  auto man = in_root("test -f " + root + "/usr/share/man/man1/sealrun.1 && test -f " + root +
                     "/usr/share/bash-completion/completions/sealrun");
  EXPECT_EQ(man.status.code, 0);
}

}  // namespace
}  // namespace sealrun::testing
