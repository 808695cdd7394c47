#!/usr/bin/env bash
# Records the CPU results committed under bench/results/: the issue's benchmark point
# (Qwen3-Next shape, B=16, cold states, L=16, bf16 and f32 ring; Kimi-Linear likewise) and
# the 4096-step fidelity table. Usage: bench/run_cpu.sh [build-dir]
set -euo pipefail
build=${1:-build}
out=bench/results
mkdir -p "$out"
header() {
  echo "# $1"
  echo
  echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo ' plus uncommitted changes')"
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
}
{
  header "CPU benchmark: packed vs replay decode"
  for args in "--model qwen3-next --ring bf16" "--model qwen3-next --ring f32" "--model kimi-linear --ring bf16"; do
    cmd="$build/replayssm bench --device cpu $args --batch 16 --ring-len 16 --io f32 --working-set-mib 1024"
    echo "command: \`$cmd\`"
    echo
    echo '```'
    $cmd
    echo '```'
    echo
  done
} > "$out/cpu-bench.md"
{
  header "CPU fidelity: state error vs float64 after 4096 steps"
  echo "command: \`$build/tests/test_ops drift\` (K=V=64, L=16; error = max|x-y| / max|y| of the final state, and of the last 64 outputs)"
  echo
  echo '```'
  "$build/tests/test_ops" drift
  echo '```'
} > "$out/cpu-fidelity.md"
echo "wrote $out/cpu-bench.md $out/cpu-fidelity.md"
