#!/usr/bin/env bash
# Runs every test of draftfs on a fresh Debian machine: installs what the
# tests need, then gofmt, go vet, and go test -race over every package
# (unit, model-based, crash, FUSE and end-to-end tests), and the FUSE
# tests once more with every mount in passthrough mode.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v fusermount3 >/dev/null || need+=(fuse3)
command -v nvim >/dev/null || need+=(neovim)
command -v git >/dev/null || need+=(git)
python3 -c 'import ensurepip' 2>/dev/null || need+=(python3-venv) # venvs in the review tests
command -v bwrap >/dev/null || need+=(bubblewrap) # draftfs run and acp
if [ ${#need[@]} -gt 0 ]; then
  echo "test.sh: installing ${need[*]}"
  if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -f scripts/peers/package.json ] && command -v npm >/dev/null; then
  (cd scripts/peers && npm ci --no-audit --no-fund --loglevel=error)
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...

mounts_before=$(grep -c ' fuse' /proc/mounts || true)
status=0
go test -race -count=1 -timeout 40m ./... || status=$?
# The memory test opens no file: the same in both modes.
DRAFTFS_TEST_PASSTHROUGH=1 go test -race -count=1 -timeout 20m -skip TestMemoryBounded ./fusefs || status=$?
# FUSE over io_uring (serve --io-uring) where the kernel has it and we
# are root: the tests turn enable_uring on and restore it.
if [ "$(id -u)" = 0 ] && [ -e /sys/module/fuse/parameters/enable_uring ]; then
  DRAFTFS_TEST_URING=1 go test -race -count=1 -timeout 20m ./fusefs || status=$?
fi
mounts_after=$(grep -c ' fuse' /proc/mounts || true)
if [ "$mounts_after" -gt "$mounts_before" ]; then
  echo "test.sh: tests left FUSE mounts behind:" >&2
  grep ' fuse' /proc/mounts >&2
  status=1
fi
exit $status
