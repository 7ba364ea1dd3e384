#!/usr/bin/env bash
# tests/linked_symbols_check.sh BINARY [CXX] — every libstdc++ function BINARY calls binds to libstdc++ itself
# (or, when the compiler CXX links libstdc++ statically, lies in BINARY).
# libtorch exports its own copies of some (std::filesystem: 142 in libtorch_cpu.so of 2.13; a broken
# remove_all in libtorch.so of 2.11+cu130 that crashed every Inductor run); the dynamic linker takes
# the first library defining a symbol, so CMakeLists.txt links libstdc++ first. Bindings are resolved
# eagerly (LD_BIND_NOW) while the binary prints its version; a symbol that libstdc++ exports, bound
# from BINARY to another library, is a failure.
set -euo pipefail
bin=$1
name=$(basename "$bin")
log=$(env -u LD_DEBUG_OUTPUT LD_BIND_NOW=1 LD_DEBUG=bindings "$bin" --version 2>&1 >/dev/null || true)
exported=$(mktemp)
trap 'rm -f "$exported"' EXIT
libstdcxx=$(grep -oE "to [^ ]*libstdc\+\+\.so[.0-9]*" <<<"$log" | sed -n 1p | cut -d' ' -f2)
if [[ -n "$libstdcxx" ]]; then
  nm -D --defined-only "$libstdcxx" | awk '{print $NF}' | sed 's/@.*//' | LC_ALL=C sort -u > "$exported"
else
  # No libstdc++.so loaded: the compiler links it statically. Its archive says what it defines.
  libstdcxx=$("${2:-c++}" -print-file-name=libstdc++.a)
  [[ -f "$libstdcxx" ]] || { echo "$bin loads no libstdc++.so and ${2:-c++} has no libstdc++.a: nothing to check" >&2; exit 1; }
  nm --defined-only "$libstdcxx" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TWVBDR]/ {print $3}' | LC_ALL=C sort -u > "$exported"
fi
# "binding file BIN [0] to LIB [0]: normal symbol `SYM' [VERSION]" for BIN's own references, other libraries.
bound_elsewhere=$(grep -E "binding file [^ ]*${name} \[0\] to " <<<"$log" | grep -v "libstdc++" \
                  | grep -vE "to [^ ]*${name} \[0\]" | sed -E "s/.* to ([^ ]*) \[0\]: normal symbol \`([^']*)'.*/\2 \1/" \
                  | LC_ALL=C sort -u || true)
wrong=$(LC_ALL=C join <(cut -d' ' -f1,2 <<<"$bound_elsewhere" | LC_ALL=C sort -k1,1) "$exported" || true)
if [[ -n "$wrong" ]]; then
  echo "$(wc -l <<<"$wrong") libstdc++ symbols of $bin are bound to another library's copy, e.g.:"
  sed -n 1,5p <<<"$wrong" | c++filt
  exit 1
fi
echo "no libstdc++ symbol of $name binds to another library's copy (checked against $libstdcxx)"
