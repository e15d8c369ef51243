#!/usr/bin/env bash
# Installs everything gmemhook needs to build and test on a fresh Debian 12 machine, then builds a
# position-independent libunwind into .deps/ (Debian's libunwind.a is not PIC, see README).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

PACKAGES=(
  build-essential cmake ninja-build pkg-config dpkg-dev python3
  clang libclang-rt-14-dev
  libunwind-dev libdw-dev libelf-dev libzstd-dev liblzma-dev zlib1g-dev libbz2-dev
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  autoconf automake libtool
  chromium  # the HTML report's tests render the page headless
  heaptrack  # no dependency: the peer bench/run_hook_bench.sh and run_reader_bench.sh time
  time  # /usr/bin/time, for the CPU time of bench/run_reader_bench.sh
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA toolkit provides headers only at build time; the hook never links libcudart/libcuda.
if ! ls /usr/local/cuda/include/cuda.h >/dev/null 2>&1 && ! ls /usr/include/cuda.h >/dev/null 2>&1; then
  echo "setup: CUDA toolkit headers not found (need cuda.h); install the CUDA 13 toolkit" >&2
  exit 1
fi

# libunwind built with -fPIC so it can live inside libgmemhook.so: Debian's libunwind.a is not
# position-independent, and a libunwind.so dependency would take over the traced program's C++
# exception unwinding (it exports _Unwind_* into the global scope).
PREFIX="$PWD/.deps/libunwind"
if [ ! -f "$PREFIX/lib/libunwind.a" ]; then
  mkdir -p .deps && cd .deps
  if [ ! -d libunwind-src ]; then
    if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/ ; then
      # Add source entries mirroring the binary ones (deb822 or one-line format).
      if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
          | $SUDO tee /etc/apt/sources.list.d/gmemhook-src.sources >/dev/null
      else
        grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
          | $SUDO tee /etc/apt/sources.list.d/gmemhook-src.list >/dev/null
      fi
      $SUDO apt-get update -qq
    fi
    rm -rf libunwind-fetch && mkdir libunwind-fetch
    (cd libunwind-fetch && apt-get source -qq --download-only libunwind >/dev/null && \
       dpkg-source -x --no-check ./*.dsc src >/dev/null)
    mv libunwind-fetch/src libunwind-src
    rm -rf libunwind-fetch
  fi
  cd libunwind-src
  [ -x configure ] || autoreconf -fi >/dev/null
  CFLAGS="-O2 -fPIC -fvisibility=hidden" ./configure -q --prefix="$PREFIX" \
    --enable-static --disable-shared --disable-minidebuginfo --disable-zlibdebuginfo \
    --disable-coredump --disable-ptrace --disable-setjmp --disable-documentation \
    --disable-tests --disable-cxx-exceptions >/dev/null
  make -s -j"$(nproc)" >/dev/null
  make -s install >/dev/null
  echo "setup: built PIC libunwind into $PREFIX"
fi
echo "setup: ok"
