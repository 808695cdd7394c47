/*
 * test_workload.c — a seeded random workload over the runtime: acquire, release, copy,
 * export/import (with corruption), raw imports, prefix insert/match/lock/unlock/evict and
 * decode/verify steps through the planner, with the invariants of fuzz_runtime.c checked
 * after every operation. The same interpreter is the libFuzzer target (clang builds).
 * Usage: test_runtime_workload [seeds] [bytes per seed]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int rt_fuzz_run(const uint8_t *data, size_t size, char *why, size_t why_len);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern long rt_fuzz_ops[12], rt_fuzz_ok[12];

int main(int argc, char **argv)
{
    const int seeds = argc > 1 ? atoi(argv[1]) : 40;
    const size_t len = argc > 2 ? (size_t)atol(argv[2]) : 1500;
    uint8_t *buf = malloc(len + 1);
    int passed = 0, failed = 0;
    char why[600];
    /* degenerate inputs */
    const uint8_t one[1] = {9};
    const int e0 = rt_fuzz_run(NULL, 0, why, sizeof why), e1 = rt_fuzz_run(one, 1, why, sizeof why);
    printf("%s empty and one-byte inputs\n", e0 || e1 ? "FAIL" : "ok  ");
    e0 || e1 ? failed++ : passed++;
    for (int seed = 0; seed < seeds; seed++) {
        uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(seed + 1);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t)(x >> 24);
        }
        const int bad = rt_fuzz_run(buf, len, why, sizeof why);
        printf("%s seed %d: %zu bytes of operations%s%s\n", bad ? "FAIL" : "ok  ", seed, len, bad ? ": " : "",
               bad ? why : "");
        bad ? failed++ : passed++;
    }
    /* the libFuzzer entry point itself (aborts on a broken invariant) */
    LLVMFuzzerTestOneInput(buf, len);
    printf("ok   LLVMFuzzerTestOneInput on the last seed\n");
    passed++;
    static const char *names[12] = {"acquire", "release", "copy",  "export+import", "raw import",  "insert",
                                    "match",   "unlock",  "evict", "decode step",   "verify step", "release B"};
    printf("operations (ok/run):");
    for (int i = 0; i < 12; i++)
        printf(" %s %ld/%ld", names[i], rt_fuzz_ok[i], rt_fuzz_ops[i]);
    printf("\n");
    free(buf);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
