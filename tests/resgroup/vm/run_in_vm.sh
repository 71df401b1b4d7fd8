#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a test program inside a throwaway VM whose kernel has cgroup v2 as its only hierarchy
# (cgroup_no_v1=all), the way tests/resgroup/cgroup_v2_vm_test.cc needs it:
#
#   run_in_vm.sh KERNEL TEST [FILE...]
#
# Builds an initramfs holding busybox, TEST and every FILE at their own absolute paths (so paths
# compiled into TEST still work), and the shared libraries they load; boots KERNEL on it with qemu
# (software emulation: the development VMs' /dev/kvm exists but nested KVM hangs at boot); the
# initramfs's init mounts cgroup2, delegates memory and pids to a child group /ci, runs TEST alone
# in it, and powers off. Exits with TEST's exit status; the console output is printed as it comes.
set -euo pipefail
kernel=${1:?usage: run_in_vm.sh KERNEL TEST [FILE...]}
test_bin=${2:?usage: run_in_vm.sh KERNEL TEST [FILE...]}
shift 2
extra=("$@")
if [ ! -r "$kernel" ]; then
  echo "run_in_vm.sh: no kernel at $kernel: run tests/fixtures/vm_kernel.sh (as .ci/test does)" >&2
  exit 2
fi
for tool in qemu-system-x86_64 busybox ldd; do
  command -v "$tool" >/dev/null || { echo "run_in_vm.sh: $tool is missing (.ci/test installs it)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/sealrun-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc}
cp "$(command -v busybox)" "$root/bin/busybox"

# A file at its own absolute path in the image; ELF files lose their debug info on the way (the
# image is unpacked into the VM's memory).
place() {
  local src=$1 dst="$root$1"
  [ -e "$dst" ] && return 0
  mkdir -p "$(dirname "$dst")"
  cp -L "$src" "$dst"
  objcopy --strip-debug "$dst" 2>/dev/null || true
}
for f in "$test_bin" "${extra[@]}"; do
  place "$f"
  # ldd prints "name => /path (addr)" per library and the loader as "/path (addr)".
  while read -r lib; do place "$lib"; done < <(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u)
done

# No tmpfs on /tmp: the initramfs root is already writable, and a build tree under /tmp (a CI
# clone in /tmp/x) must stay visible at its own path.
cat > "$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
echo "+memory +pids" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/ci
# The test alone in /ci (init stays in the root group), as a delegated service would be.
(echo 0 > /sys/fs/cgroup/ci/cgroup.procs && exec $test_bin --gtest_color=no)
echo "SEALRUN-VM-EXIT \$?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initramfs.gz")

log=$work/console.log
timeout --kill-after=10 900 qemu-system-x86_64 -accel tcg -m 768 -smp 1 -nographic -no-reboot \
  -kernel "$kernel" -initrd "$work/initramfs.gz" \
  -append "console=ttyS0 cgroup_no_v1=all panic=-1 quiet" < /dev/null 2>&1 | tee "$log" || true
rc=$(sed -n 's/.*SEALRUN-VM-EXIT \([0-9]*\).*/\1/p' "$log" | tail -n 1)
if [ -z "$rc" ]; then
  echo "run_in_vm.sh: the VM ended without reporting the test's exit status" >&2
  exit 1
fi
exit "$rc"
