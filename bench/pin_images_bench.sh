#!/bin/bash
# Pin images (docs/view.md, "How pinned bytes are served"): what serving pinned bytes from a
# read-only EROFS image costs a job's start, against binding host files live, in paired runs of a
# bare bwrap (as root, like the controller's launch), for a closure of N files:
#   live   N --ro-bind of the host files (what a learned closure was before);
#   image  the same N binds, from the closure's erofs image mounted read-only (what sealrun does
#          now: the files bound one by one, each from the image);
#   whole  one --ro-bind of the whole image's directory (one image per view: one mount).
# Then the first-run cost of an image: mkfs.erofs of TREE (default /usr) and its size.
#   bench/pin_images_bench.sh [N=300] [RUNS=20] [TREE]
set -euo pipefail
N=${1:-300}
RUNS=${2:-20}
TREE=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /var/tmp/pin-bench.XXXXXX)
LOOP=
cleanup() {
  umount "$W/mnt" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/host/lib" "$W/stage/host/lib" "$W/mnt"
for i in $(seq 1 "$N"); do
  head -c 4096 /dev/urandom > "$W/host/lib/f$i"
  cp "$W/host/lib/f$i" "$W/stage/host/lib/f$i"
done
mkfs.erofs --quiet "$W/closure.erofs" "$W/stage" >/dev/null
mount -t erofs -o ro,nosuid,nodev,loop "$W/closure.erofs" "$W/mnt"
BWRAP="bwrap --unshare-all --die-with-parent --tmpfs / --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib64 /lib64 --symlink usr/lib /lib --proc /proc --dev /dev"
live=$BWRAP
image=$BWRAP
for i in $(seq 1 "$N"); do
  live="$live --ro-bind $W/host/lib/f$i $W/host/lib/f$i"
  image="$image --ro-bind $W/mnt/host/lib/f$i $W/host/lib/f$i"
done
whole="$BWRAP --ro-bind $W/mnt/host $W/host"
echo "== $N files: image (N binds from the image) vs live (N binds of host files)"
python3 "$HERE/paired.py" -n "$RUNS" --warmup 3 --vs "$live -- /bin/true" -- $image -- /bin/true | grep -v -e "^A = " -e "^B = "
echo "== $N files: whole (one bind of the image) vs live"
python3 "$HERE/paired.py" -n "$RUNS" --warmup 3 --vs "$live -- /bin/true" -- $whole -- /bin/true | grep -v -e "^A = " -e "^B = "
if [ -n "$TREE" ]; then
  echo "== first-run cost: mkfs.erofs of $TREE"
  du -sh "$TREE"
  /usr/bin/time -f "mkfs.erofs: %e s wall, %M KiB max RSS" \
    mkfs.erofs --quiet --preserve-mtime "$W/tree.erofs" "$TREE" >/dev/null
  ls -l "$W/tree.erofs"
fi
