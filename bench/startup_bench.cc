// SPDX-License-Identifier: Apache-2.0
// Start-up overhead of a contained `true`: sealrun's mechanisms against their plain peers, measured
// in the same run on the same machine, reported as medians and ratios (not a ctest test: the
// figures depend on the machine; see bench/README.md).
//
//   plain bwrap        bwrap --unshare-all ... /bin/true, as the job user
//   sealrun bwrap      acquire_grant + BwrapMechanism::spawn + wait + cleanup
//   plain podman warm  podman run --rm <id> /bin/true in a storage that already holds the image
//   plain podman cold  fresh storage, podman load, podman run --rm, rm -rf: what a per-run storage
//                      costs without sealrun
//   sealrun podman     acquire_grant + PodmanMechanism::spawn (fresh storage, load, id check,
//                      seccomp profile, mount checks) + wait + cleanup (rm, pause process, storage)
//
// Usage: startup_bench [ITERATIONS]   (default 5; every variant runs once untimed first)
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "containment/bwrap.h"
#include "containment/grant.h"
#include "containment/podman.h"
#include "containment/podman_argv.h"
#include "containment/podman_runner.h"
#include "containment/podman_storage.h"
#include "core/process.h"
#include "core/syscall.h"

namespace fs = std::filesystem;
using namespace sealrun;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "startup_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T must(Result<T> r, const char* what) {
  if (!r.ok()) die(fmt::format("{}: {}", what, r.error().message()));
  return std::move(r).value();
}
void must(Status s, const char* what) {
  if (!s.ok()) die(fmt::format("{}: {}", what, s.error().message()));
}

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// A scratch area the job user can traverse: /var/tmp/sealrun-bench-XXXXXX (0711).
struct Scratch {
  fs::path root;
  Scratch() {
    std::string t = "/var/tmp/sealrun-bench-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) die("mkdtemp");
    root = t;
    fs::permissions(root, fs::perms(0711));
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

void run_plain(const JobUser& user, const podman::StorageLayout& layout,
               std::vector<std::string> argv) {
  auto c = must(run_capture(podman::as_job_user(user, layout, std::move(argv)), 120000), "run");
  if (!c.status.success()) die("plain command failed: " + c.err);
}

struct Variant {
  std::string name;
  std::function<void(int)> once;
  std::vector<double> ms;
  double median() const {
    auto v = ms;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }
};

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 5;
  if (iterations < 1) die("ITERATIONS must be positive");
  std::string fixtures = std::string(SEALRUN_BINARY_DIR) + "/fixtures";
  if (!fs::exists(fixtures + "/busybox.oci.tar")) {
    std::string cmd = fmt::format("bash {}/tests/fixtures/busybox_image.sh {} >/dev/null",
                                  SEALRUN_SOURCE_DIR, fixtures);
    if (std::system(cmd.c_str()) != 0) die("could not build the busybox fixture: " + cmd);
  }
  std::string archive = fixtures + "/busybox.oci.tar";
  std::string image_id = read_first_line(fixtures + "/busybox.image-id");
  Scratch scratch;
  auto user = must(podman::resolve_job_user(kDefaultJobUser), "job user");
  std::string bwrap = must(find_program("bwrap"), "bwrap");

  auto podman_mech = make_podman_mechanism();
  auto bwrap_mech = make_bwrap_mechanism();
  MechanismProbe pp = podman_mech->probe();
  MechanismProbe bp = bwrap_mech->probe();
  if (!pp.available) die("podman unavailable: " + pp.unavailable_reason);

  // A warm storage for plain podman, the image already loaded.
  // The bwrap job's /bin: a static busybox (Debian's busybox-static) and its `true`.
  const fs::path job_bin = scratch.root / "bin";
  fs::create_directory(job_bin);
  fs::copy_file("/bin/busybox", job_bin / "busybox");
  fs::create_symlink("busybox", job_bin / "true");
  fs::permissions(job_bin, fs::perms(0755));
  fs::create_directory(scratch.root / "warm");
  fs::permissions(scratch.root / "warm", fs::perms(0711));
  auto warm = podman::storage_layout((scratch.root / "warm").string());
  must(podman::prepare_storage(warm, user), "warm storage");
  podman::HostFacts facts;
  facts.podman_path = pp.path;
  facts.runtime_path = must(find_program("runc"), "runc");
  run_plain(user, warm, podman::load_argv(warm, facts, archive));
  std::string hex = must(podman::image_hex(image_id), "image id");
  auto plain_run = [&](const podman::StorageLayout& l) {
    auto a = podman::global_args(l, facts);
    a.insert(a.end(), {"run", "--rm", "--pull=never", "--network=none", "--log-driver", "none", hex,
                       "/bin/true"});
    return a;
  };

  auto sealrun_run = [&](Mechanism& mech, int i) {
    fs::path run = scratch.root / fmt::format("{}-{}", mech.name(), i);
    for (const char* d : {"", "/owned", "/src", "/out"}) fs::create_directory(run.string() + d);
    fs::permissions(run, fs::perms(0711));
    fs::permissions(run / "owned", fs::perms(0711));
    ContainmentSpec spec;
    spec.run_id = fmt::format("bench-{}-{}-{}", mech.name(), ::getpid(), i);
    spec.owned_root = (run / "owned").string();
    spec.argv = {"/bin/true"};
    spec.cwd = "/src";
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.mounts = {{(run / "src").string(), "/src", MountSpec::Access::kReadOnly},
                   {(run / "out").string(), "/out", MountSpec::Access::kWritable}};
    // The job sees only what its view names (docs/view.md): under bwrap, a static busybox as
    // /bin/true (a bwrap run of an image needs its root unpacked by the controller first);
    // podman runs the image itself.
    if (mech.kind() == MechanismKind::kBwrap)
      spec.mounts.push_back({job_bin.string(), "/bin", MountSpec::Access::kReadOnly});
    else
      spec.image = ImageRef{archive, image_id};
    spec.requested =
        DimensionSet{Dimension::kFilesystem, Dimension::kProcessTree, Dimension::kWallClock,
                     Dimension::kNetwork,    Dimension::kSyscalls,    Dimension::kCapabilities};
    spec.required = spec.requested;
    spec.wall_clock_ms = 60000;
    Grant grant = must(acquire_grant(spec, {&mech}, GroupCapabilities{}), "grant");
    auto job = must(mech.spawn(grant, nullptr, JobIo{}), "spawn");
    JobExit exit = must(job->wait(), "wait");
    if (!exit.status.success())
      die(fmt::format("{}: true failed: {}", mech.name(), exit.status.describe()));
    must(job->cleanup(), "cleanup");
  };

  std::vector<Variant> variants;
  if (bp.available) {
    variants.push_back({"plain bwrap", [&](int) {
                          run_plain(user, warm,
                                    {bwrap,           "--unshare-all", "--die-with-parent",
                                     "--new-session", "--cap-drop",    "ALL",
                                     "--ro-bind",     "/usr",          "/usr",
                                     "--symlink",     "usr/bin",       "/bin",
                                     "--symlink",     "usr/lib",       "/lib",
                                     "--symlink",     "usr/lib64",     "/lib64",
                                     "--proc",        "/proc",         "--dev",
                                     "/dev",          "--tmpfs",       "/tmp",
                                     "/bin/true"});
                        }});
    variants.push_back({"sealrun bwrap", [&](int i) { sealrun_run(*bwrap_mech, i); }});
  } else {
    std::fprintf(stderr, "startup_bench: bwrap mechanism unavailable (%s); podman only\n",
                 bp.unavailable_reason.c_str());
  }
  variants.push_back({"plain podman warm", [&](int) { run_plain(user, warm, plain_run(warm)); }});
  variants.push_back({"plain podman cold", [&](int i) {
                        fs::path d = scratch.root / fmt::format("cold-{}", i);
                        fs::create_directory(d);
                        fs::permissions(d, fs::perms(0711));
                        auto l = podman::storage_layout(d.string());
                        must(podman::prepare_storage(l, user), "cold storage");
                        run_plain(user, l, podman::load_argv(l, facts, archive));
                        run_plain(user, l, plain_run(l));
                        std::vector<std::string> actions;
                        must(podman::remove_storage(l, user, facts, "", actions), "cold cleanup");
                      }});
  variants.push_back({"sealrun podman", [&](int i) { sealrun_run(*podman_mech, i); }});

  // Interleaved rounds, so slow drift on a shared machine hits every variant alike.
  for (auto& v : variants) v.once(-1);  // warm-up, untimed
  for (int i = 0; i < iterations; ++i) {
    for (auto& v : variants) {
      int64_t t0 = monotonic_ms();
      v.once(i);
      v.ms.push_back(static_cast<double>(monotonic_ms() - t0));
    }
  }
  std::vector<std::string> actions;
  (void)podman::remove_storage(warm, user, facts, "", actions);

  auto find = [&](const std::string& n) -> const Variant* {
    for (const auto& v : variants)
      if (v.name == n) return &v;
    return nullptr;
  };
  std::printf("start-up of a contained /bin/true, %d iterations (median, min, max in ms)\n",
              iterations);
  for (const auto& v : variants) {
    auto [lo, hi] = std::minmax_element(v.ms.begin(), v.ms.end());
    std::printf("  %-18s %8.0f %8.0f %8.0f\n", v.name.c_str(), v.median(), *lo, *hi);
  }
  auto ratio = [&](const char* a, const char* b) {
    const Variant* x = find(a);
    const Variant* y = find(b);
    if (x != nullptr && y != nullptr && y->median() > 0)
      std::printf("  %-18s / %-18s = %.2fx\n", a, b, x->median() / y->median());
  };
  std::printf("ratios of medians\n");
  ratio("sealrun bwrap", "plain bwrap");
  ratio("sealrun podman", "plain podman warm");
  ratio("sealrun podman", "plain podman cold");
  ratio("sealrun podman", "sealrun bwrap");
  return 0;
}
