#!/usr/bin/env bash
# The C envs and kernels under AddressSanitizer and UndefinedBehaviorSanitizer: a copy of the
# source tree is built with the sanitizers (any report aborts), then tests/sanitize/drive_envs.py
# drives every built-in C env through it. Run from the repository root with the project's
# Python environment active (numpy, gymnasium, cython): `bash tests/sanitize/run.sh [ENV ...]`.
# Its closing line is drive_envs.py's "N passed, N failed"; exit status non-zero on any report.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d /tmp/puffer-sanitize.XXXXXX)"
trap '[ -n "${SANITIZE_KEEP:-}" ] || rm -rf "$work"' EXIT

# The tracked sources only (no in-place builds of the normal install).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work"
else
    tar --exclude=.venv --exclude='*.so' -cf - . | tar -xf - -C "$work"
fi
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
(cd "$work" && CFLAGS="$sanitize" LDFLAGS="-fsanitize=address,undefined" \
    python setup.py -q build_ext --inplace >"$work/build.log" 2>&1) \
    || { tail -30 "$work/build.log"; echo "sanitizer build failed"; exit 1; }

# puffer_tui from the sanitized copy: the package folder (_pkg) with the other rooms linked in,
# first on the path (before the editable install's finder, which sits at the end of it).
mkdir -p "$work/site"
for room in app screens engine envs benchmarks; do ln -s "$work/$room" "$work/_pkg/$room"; done
ln -s "$work/_pkg" "$work/site/puffer_tui"

libasan="$(gcc -print-file-name=libasan.so)"
[ -f "$libasan" ] || { echo "sanitizers unavailable: gcc has no libasan.so (Debian: apt-get install gcc)"; exit 1; }
# Python itself is not instrumented and keeps memory until exit: leaks are not the question.
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
LD_PRELOAD="$libasan" PYTHONPATH="$work/site" PYTHONDONTWRITEBYTECODE=1 \
    python "$work/tests/sanitize/drive_envs.py" "$@"
