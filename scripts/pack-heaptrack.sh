#!/usr/bin/env bash
# Packs this machine's heaptrack (Debian's package) into DIR so that it runs on a machine that
# lacks it — the GPU machine, the quietest place to measure the hook and the reader against it
# (scripts/host-bench.sh). DIR/bin holds `heaptrack` and `heaptrack_print` wrappers that put
# DIR/deps (libunwind, Boost 1.74: what an Ubuntu GPU machine does not have) on the library path.
# Usage: scripts/pack-heaptrack.sh DIR
set -euo pipefail
DIR=${1:?usage: scripts/pack-heaptrack.sh DIR}
HEAPTRACK=$(command -v heaptrack) || exit 1
PRINT=$(command -v heaptrack_print) || exit 1
LIBS=$(dirname "$HEAPTRACK")/../lib/heaptrack
mkdir -p "$DIR/heaptrack/bin" "$DIR/heaptrack/lib" "$DIR/deps" "$DIR/bin"
# The heaptrack script finds its preload library and interpreter relative to itself.
cp "$HEAPTRACK" "$PRINT" "$DIR/heaptrack/bin/"
cp -r "$LIBS" "$DIR/heaptrack/lib/"
for f in "$DIR/heaptrack/bin/heaptrack_print" "$DIR/heaptrack/lib/heaptrack/libheaptrack_preload.so" \
         "$DIR/heaptrack/lib/heaptrack/libexec/heaptrack_interpret"; do
  ldd "$f" | awk '$3 ~ /libunwind|libboost/ { print $3 }'
done | sort -u | xargs -r cp -L -t "$DIR/deps/"
for tool in heaptrack heaptrack_print; do
  cat >"$DIR/bin/$tool" <<WRAP
#!/usr/bin/env bash
here=\$(cd "\$(dirname "\$0")/.." && pwd)
export LD_LIBRARY_PATH="\$here/deps\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "\$here/heaptrack/bin/$tool" "\$@"
WRAP
  chmod +x "$DIR/bin/$tool"
done
