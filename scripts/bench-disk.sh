# Sourced by bench and bench-scale. bench_disk NAME sets base to a new
# directory for the bench's trees; bench_disk_remove removes it.
#
# On disk, not tmpfs: every variant reads the same kind of file system.
# By default a fresh ext4 file system with a journal (as mkfs.ext4 makes
# it, and as users' disks are), on a loop device with direct I/O (no
# second page cache). On an ext4 without a journal the kernel skips, for
# 30 s, the inode numbers freed on it, reading each one's inode to tell:
# after a test suite or another line deleted thousands of files,
# creating a file there could cost more CPU than the variant's own work,
# charged to whichever variant came next. BENCH_DISK=DIR runs in DIR's
# file system as it is instead.
bench_image= bench_loop=
bench_disk() {
  base=$(mktemp -d "${BENCH_DISK:-/var/tmp}/$1.XXXXXX")
  [ -z "${BENCH_DISK:-}" ] || return 0
  bench_image=$base.img
  truncate -s 24G "$bench_image"
  # A new sparse file reads as zeros: no inode tables to write.
  mkfs.ext4 -q -F -E assume_storage_prezeroed=1 "$bench_image"
  bench_loop=$(losetup --direct-io=on -f --show "$bench_image")
  mount "$bench_loop" "$base"
}
bench_disk_remove() {
  if [ -z "$bench_loop" ]; then
    rm -rf "$base"
    return
  fi
  umount "$base" 2>/dev/null || umount -l "$base"
  losetup -d "$bench_loop"
  rmdir "$base"
  rm -f "$bench_image"
}
