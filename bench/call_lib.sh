# bench/call_lib.sh — what the scripts of device calls (bench/results/*/call*.sh) share. Source it
# from the repository root on the GPU machine:
#   . bench/call_lib.sh
#   call_begin /tmp/resX                    # $O, emptied; $O/info.txt: date, GPU, memory clock
#   V=$(call_unpack /tmp/vx "$PKG")         # a package of built binaries (folder M inside)
#   bench_rows TAG "$O/bench.txt" ARGS...   # `replayssm bench ARGS`' staggered rows, tagged
#   el "round 1"                            # seconds since call_begin
call_begin() {
  O=$1
  rm -rf "$O" && mkdir -p "$O"
  T0=$(date +%s)
  { date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version,clocks.max.memory,memory.total --format=csv; } > "$O/info.txt"
}
el() { echo "[$(($(date +%s) - T0)) s] $*"; }
call_unpack() {
  local dir=$1 pkg=${2:?call_unpack DIR PKG: PKG is a .gpzN/pzN.txz}
  rm -rf "$dir" && mkdir -p "$dir" && tar xJf "$pkg" -C "$dir" && echo "$dir/M"
}
bench_rows() {
  local tag=$1 file=$2
  shift 2
  LD_LIBRARY_PATH=$V "$V/replayssm" bench "$@" |
    awk -v t="$tag" '/staggered/{printf "%-22s %s\n", t, $0; fflush()}' >> "$file"
}
