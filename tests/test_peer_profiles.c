/* tests/test_peer_profiles.c — each peer over its real library matches the reference profile
 * that names what it computes, bit for bit, on at least 10,000 random problems of the forms the
 * library supports (`qmmcheck diff --only ...`, docs/profiles.md). Skipped, saying why, when
 * the peer was not built (its Debian package absent) or .venv lacks the Python package.
 * Where the library's arithmetic depends on the CPU (ONNX Runtime's MLAS), the profile is
 * chosen from /proc/cpuinfo and the test says which, and whether that choice was measured. */
#include <criterion/criterion.h>

#include "tests/cli_support.h"

TestSuite(peer_profiles, .init = make_tmp, .fini = remove_tmp, .timeout = 600);

#define WANT_COMPARED 10000ULL
/* onnxruntime: problems per diff chunk, ~2% of them u8·s8 per-tensor nonempty and compared:
 * 14 chunks of each operator, ~60 s in all on 2 Zen 3 cores */
#define ORT_CHUNK 40000ULL

/* build/peers/<p>/libqmm_peer_<p>.so next to the qmmcheck under test, or skips. */
static void plugin_path(const char *peer, char *buf, size_t size)
{
    snprintf(buf, size, "%s", env("QMMCHECK"));
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0';
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "/../peers/%s/libqmm_peer_%s.so", peer, peer);
    if (access(buf, R_OK) != 0)
        cr_skip_test("%s not built (its Debian package is not installed)", buf);
}

/* Runs diff of `profile` against `spec` over problems of the forms `only`, from index 0 in
 * chunks until `want` were compared; expects no value difference, and no status difference
 * but those of the known classes `known` (NULL-terminated, may be NULL: lines of the diff's
 * output naming a class the peer's README lists, one line per difference), which are counted.
 * `options`: further diff options ("--no-isolate" for a plugin, 3x faster in process). */
static void expect_profile_but(const char *profile, const char *spec, const char *only,
                               unsigned long long chunk, unsigned long long want,
                               const char *const *known, const char *options)
{
    unsigned long long same = 0, start = 0, in_known = 0;
    for (int round = 0; same < want && round < 20; round++, start += chunk) {
        char *out;
        int rc = qmmcheck(&out, "diff --backend reference:profile=%s --backend '%s' --seed 14 "
                                "--start %llu --count %llu --only %s --quiet --out '%s/diff' %s",
                          profile, spec, start, chunk, only, tmpdir, options);
        const char *s = strstr(out, "DIFF SUMMARY:");
        cr_assert(s != NULL, "%s", out);
        unsigned long long p = 0, sm = 0, d = 1, k = 0;
        cr_assert_eq(sscanf(s, "DIFF SUMMARY: problems:%llu same:%llu differences:%llu", &p,
                            &sm, &d), 3, "%s", s);
        cr_expect_eq(rc, d ? 1 : 0, "diff exited %d:\n%s", rc, out); /* 1: differences */
        cr_expect_eq(count_lines_with(out, "elements differ"), 0, "value differences:\n%s", out);
        for (int i = 0; known && known[i]; i++)
            k += (unsigned long long)count_lines_with(out, known[i]);
        cr_expect_eq(d, k, "%llu differences, %llu of known classes:\n%s", d, k, out);
        same += sm;
        in_known += k;
        cr_log_info("%s vs %s, --only %s, problems %llu..%llu: %s", profile, spec, only, start,
                    start + chunk - 1, s);
        free(out);
    }
    cr_expect_geq(same, want, "only %llu problems compared", same);
    cr_log_info("%s, --only %s: %llu compared, all equal; %llu status differences of known "
                "classes", spec, only, same, in_known);
}

static void expect_profile(const char *profile, const char *spec, const char *only,
                           unsigned long long chunk)
{
    expect_profile_but(profile, spec, only, chunk, WANT_COMPARED, NULL, "");
}

Test(peer_profiles, gemmlowp_is_gemmlowp)
{
    char so[1024];
    plugin_path("gemmlowp", so, sizeof so);
    expect_profile("gemmlowp", so, "u8u8u8,per-tensor,nonempty", 420000);
}

Test(peer_profiles, xnnpack_is_ort_fp32)
{
    char so[1024];
    plugin_path("xnnpack", so, sizeof so);
    expect_profile("ort-fp32", so, "u8u8u8,per-tensor,nonempty", 250000);
    expect_profile("ort-fp32", so, "s8s8s8,per-tensor,nonempty", 250000);
}

/* Every form the onednn-fp32+pairsat16 row claims (reference/profiles.c, onednn_forms): s8 b
 * with u8 or s8 a, QLinearMatMul to both output types and MatMulInteger. That covers int16
 * pair saturation with K blocked as oneDNN's GEMM driver blocks it, s8 a shifted into u8
 * without zero points and oneDNN's reference GEMM (saturating to int32) with them, and float
 * requantization with the zero point added before rounding. nonempty: K = 0 leaves y
 * unwritten and M = 0 or N = 0 crashes oneDNN 2.6 (peers/onednn/README.md). In process, ~3
 * times faster than through the worker, with one OpenMP thread, without which LeakSanitizer
 * cannot stop libgomp's threads at exit. ~45 s for ~12,000 compared problems per form. */
Test(peer_profiles, onednn_is_onednn_fp32_pairsat16)
{
    char so[1024];
    plugin_path("onednn", so, sizeof so);
    setenv("OMP_NUM_THREADS", "1", 1);
    const char *forms[] = {"u8s8u8,nonempty", "u8s8s8,nonempty", "s8s8s8,nonempty",
                           "s8s8u8,nonempty", "u8s8,nonempty",   "s8s8,nonempty"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        expect_profile_but("onednn-fp32+pairsat16", so, forms[i], 200000, WANT_COMPARED, NULL,
                           "--no-isolate");
}

/* ONNX Runtime's u8·s8 through peers/onnxruntime: what MLAS computes depends on the CPU. With
 * VNNI or AMX it accumulates in int32 (ort-fp32, expected: not measured, the development machine
 * has neither); on AVX2 alone vpmaddubsw saturates each k-pair in int16 (ort-fp32+pairsat16,
 * measured). nonempty: K = 0 returns uninitialised memory (and SIGFPE with per-column b
 * parameters); per-tensor: ORT rejects per-row / per-column zero points. The status
 * differences left (docs/peers.md's ORT classes 4 and 5) are counted; no value may differ. */
Test(peer_profiles, onnxruntime_is_ort_fp32_on_its_cpu)
{
    const char *src = env("QMM_SOURCE_DIR");
    char spec[2048], cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/.venv/bin/python' -c 'import onnxruntime' 2>/dev/null", src);
    if (system(cmd) != 0)
        cr_skip_test("%s/.venv has no onnxruntime: run scripts/pydeps.sh", src);
    const char *profile = NULL;
    if (system("grep -m1 '^flags' /proc/cpuinfo | grep -qwE 'avx512_vnni|avx_vnni|amx_int8'") ==
        0) {
        profile = "ort-fp32";
        cr_log_warn("CPU with VNNI/AMX: expecting ort-fp32 (MLAS's exact int32 u8·s8 kernels). "
                    "Expected, not measured: the development machine (AVX2 only) cannot run "
                    "that path");
    } else if (system("grep -m1 '^flags' /proc/cpuinfo | grep -qw avx2") == 0) {
        profile = "ort-fp32+pairsat16";
        cr_log_info("CPU with AVX2, no VNNI/AMX: expecting ort-fp32+pairsat16 (measured)");
    } else {
        cr_skip_test("no AVX2 in /proc/cpuinfo: MLAS's u8·s8 path on this CPU is not modelled");
    }
    snprintf(spec, sizeof spec, "exec:%s/.venv/bin/python %s/peers/onnxruntime/backend.py", src,
             src);
    /* docs/peers.md's ORT classes 4 and 5: valid one-element zero points of rank > 1 rejected
     * ("... zero point must be a scalar or 1D tensor of size 1", "B zero point is not
     * valid"), invalid scales accepted */
    static const char *const known[] = {"zero point must be a scalar",
                                        "B zero point is not valid",
                                        "]: must be finite and > 0", NULL};
    /* u8s8s8 has no ORT CPU kernel (NOT_IMPLEMENTED, skipped): u8s8u8 only */
    expect_profile_but(profile, spec, "u8s8u8,per-tensor,nonempty", ORT_CHUNK, WANT_COMPARED,
                       known, "");
    expect_profile_but(profile, spec, "u8s8,per-tensor,nonempty", ORT_CHUNK, WANT_COMPARED,
                       known, "");
}
