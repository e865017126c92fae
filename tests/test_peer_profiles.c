/* tests/test_peer_profiles.c — each peer over its real library matches the reference profile
 * that names what it computes, bit for bit, on at least 10,000 random problems of the forms the
 * library supports (`qmmcheck diff --only ...`, docs/profiles.md), and `qmmcheck fingerprint`
 * names that profile. Skipped, saying why, when the peer was not built (its Debian package
 * absent) or .venv lacks the Python package.
 *
 * oneDNN, ONNX Runtime (MLAS) and XNNPACK pick their int8 kernels by CPUID, so what they compute
 * depends on the CPU class (harness/io/cpuclass.h: /proc/cpuinfo's flags, or $QMM_CPU_CLASS):
 * each such test keys its expectation on the class, from the table of what was measured on it,
 * and is skipped, with the reason, on a class never measured. A failing check prints a bounded
 * excerpt of the diff (its first DIFF lines and how many there were), not the whole output. */
#include <criterion/criterion.h>

#include "harness/io/cpuclass.h"
#include "tests/cli_support.h"

TestSuite(peer_profiles, .init = make_tmp, .fini = remove_tmp, .timeout = 600);

#define WANT_COMPARED 10000ULL
/* onnxruntime: problems per diff chunk, ~2% of them u8·s8 per-tensor nonempty and compared:
 * 14 chunks of each operator, ~60 s in all on 2 Zen 3 cores */
#define ORT_CHUNK 40000ULL
/* the DIFF lines a failing check shows */
#define EXCERPT_LINES 20
#define EXCERPT_SHOWN "20"

/* What a peer computes on one CPU class, as measured there (docs/peers.md, "Fingerprints"):
 * avx2 natively on Zen 3 (and its fingerprints with today's suite under qemu-x86_64 -cpu
 * Haswell), avx512-vnni natively on Zen 4. */
typedef struct measured {
    const char *cpu_class, *profile;
} measured;

/* oneDNN 2.6.3: on AVX2 (Zen 3) int16 pair sums, s8·s8 shifted, K blocked, the saturating
 * reference GEMM for s8 a with zero points; with AVX-512 VNNI (Zen 4) exact int32, and
 * MatMulInteger's int32 through float32 */
static const measured onednn_measured[] = {{"avx2", "onednn-fp32+onednn-avx2"},
                                           {"avx512-vnni", "onednn-fp32+onednn-avx512-vnni"},
                                           {NULL, NULL}};
/* ONNX Runtime 1.32 (MLAS): vpmaddubsw's int16 pairs on AVX2; vpdpbusd, exact, with VNNI */
static const measured ort_measured[] = {
    {"avx2", "ort-fp32+pairsat16"}, {"avx512-vnni", "ort-fp32"}, {NULL, NULL}};
/* XNNPACK 2022-02: u8·u8 and s8·s8 only, exact in int32, fp32 requantization */
static const measured xnnpack_measured[] = {
    {"avx2", "ort-fp32"}, {"avx512-vnni", "ort-fp32"}, {NULL, NULL}};

/* The entry of `table` for this machine's CPU class; skips the test, saying why, when the
 * class was never measured. */
static const measured *on_this_cpu(const char *peer, const measured *table)
{
    const char *cls = NULL;
    char why[256], known[256] = "";
    cr_assert_eq(qh_cpu_class(&cls, why, sizeof why), 0, "%s", why);
    for (const measured *m = table; m->cpu_class; m++) {
        if (strcmp(m->cpu_class, cls) == 0) {
            cr_log_info("%s on CPU class %s: expecting %s (measured on that class)", peer, cls,
                        m->profile);
            return m;
        }
        size_t n = strlen(known);
        snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", m->cpu_class);
    }
    cr_skip_test("%s on CPU class %s: what it computes there was never measured (measured on "
                 "%s; docs/peers.md says how to measure a class)",
                 peer, cls, known);
    return NULL;
}

/* At most EXCERPT_LINES of the lines of `out` that start with "DIFF " (each cut at 400
 * bytes), how many there were, and the summary line: what a failing check prints. */
static const char *excerpt(const char *out)
{
    static char buf[EXCERPT_LINES * 420 + 512];
    size_t o = 0;
    int n = 0;
    const char *summary = NULL;
    buf[0] = '\0';
    for (const char *line = out; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (strncmp(line, "DIFF SUMMARY", 12) == 0)
            summary = line;
        else if (strncmp(line, "DIFF ", 5) == 0 && n++ < EXCERPT_LINES && o < sizeof buf)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%.*s%s\n",
                                  (int)(len > 400 ? 400 : len), line, len > 400 ? " ..." : "");
        line = nl ? nl + 1 : NULL;
    }
    if (o < sizeof buf)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "(%d DIFF line(s)%s)\n%.*s", n,
                              n > EXCERPT_LINES ? ", the first " EXCERPT_SHOWN " shown" : "",
                              summary ? (int)strcspn(summary, "\n") : 0, summary ? summary : "");
    return buf;
}

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
        cr_assert(s != NULL, "no DIFF SUMMARY line:\n%s", excerpt(out));
        unsigned long long p = 0, sm = 0, d = 1, k = 0;
        cr_assert_eq(sscanf(s, "DIFF SUMMARY: problems:%llu same:%llu differences:%llu", &p,
                            &sm, &d), 3, "%.200s", s);
        /* the first chunk that differs ends the test: one excerpt, not one per chunk */
        cr_assert_eq(rc, d ? 1 : 0, "diff exited %d:\n%s", rc, excerpt(out)); /* 1: differences */
        cr_assert_eq(count_lines_with(out, "elements differ"), 0, "value differences:\n%s",
                     excerpt(out));
        for (int i = 0; known && known[i]; i++)
            k += (unsigned long long)count_lines_with(out, known[i]);
        cr_assert_eq(d, k, "%llu differences, %llu of known classes:\n%s", d, k, excerpt(out));
        same += sm;
        in_known += k;
        cr_log_info("%s vs %s, --only %s, problems %llu..%llu: %.200s", profile, spec, only,
                    start, start + chunk - 1, s);
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

/* `qmmcheck fingerprint` names m->profile for `spec`. */
static void expect_fingerprint(const measured *m, const char *spec, const char *options)
{
    char *out, want[256];
    int rc = qmmcheck(&out, "fingerprint --backend '%s' %s", spec, options);
    cr_expect_eq(rc, 0, "fingerprint exited %d", rc);
    snprintf(want, sizeof want, "\nverdict: %s (matches every case it defines)\n", m->profile);
    const char *v = strstr(out, "\nverdict: ");
    cr_expect(strstr(out, want) != NULL, "expected %.*s, got %.300s", (int)strlen(want) - 2,
              want + 1, v ? v + 1 : "no verdict line");
    free(out);
}

/* gemmlowp is header-only: its kernels are chosen when peers/gemmlowp is compiled, not by the
 * CPU it runs on, so its expectation holds on every class. */
Test(peer_profiles, gemmlowp_is_gemmlowp)
{
    char so[1024];
    plugin_path("gemmlowp", so, sizeof so);
    expect_profile("gemmlowp", so, "u8u8u8,per-tensor,nonempty", 420000);
}

Test(peer_profiles, xnnpack_is_ort_fp32_on_its_cpu)
{
    char so[1024];
    plugin_path("xnnpack", so, sizeof so);
    const measured *m = on_this_cpu("XNNPACK", xnnpack_measured);
    expect_profile(m->profile, so, "u8u8u8,per-tensor,nonempty", 250000);
    expect_profile(m->profile, so, "s8s8s8,per-tensor,nonempty", 250000);
    expect_fingerprint(m, so, "--no-isolate");
}

/* Every form the onednn-fp32 requantization claims (reference/profiles.c, onednn_forms): s8 b
 * with u8 or s8 a, QLinearMatMul to both output types and MatMulInteger, with and without zero
 * points (the generator draws both). On AVX2 that covers int16 pair saturation with K blocked
 * as oneDNN's GEMM driver blocks it, s8 a shifted into u8 without zero points and oneDNN's
 * reference GEMM (saturating to int32) with them; with AVX-512 VNNI exact int32 (random
 * problems do not reach 2^24, where MatMulInteger's float32 round trip shows: the fingerprint's
 * int32-output-via-float32-s8 case does); and float requantization with the zero point added
 * before rounding. nonempty: K = 0 leaves y unwritten and M = 0 or N = 0 crashes oneDNN 2.6
 * (peers/onednn/README.md). In process, ~3 times faster than through the worker, with one
 * OpenMP thread, without which LeakSanitizer cannot stop libgomp's threads at exit. ~45 s for
 * ~12,000 compared problems per form. */
Test(peer_profiles, onednn_is_onednn_fp32_on_its_cpu)
{
    char so[1024];
    plugin_path("onednn", so, sizeof so);
    const measured *m = on_this_cpu("oneDNN", onednn_measured);
    setenv("OMP_NUM_THREADS", "1", 1);
    const char *forms[] = {"u8s8u8,nonempty", "u8s8s8,nonempty", "s8s8s8,nonempty",
                           "s8s8u8,nonempty", "u8s8,nonempty",   "s8s8,nonempty"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        expect_profile_but(m->profile, so, forms[i], 200000, WANT_COMPARED, NULL,
                           "--no-isolate");
    expect_fingerprint(m, so, "--no-isolate");
}

/* ONNX Runtime's u8·s8 through peers/onnxruntime: what MLAS computes depends on the CPU (see
 * ort_measured). nonempty: K = 0 returns uninitialised memory (and SIGFPE with per-column b
 * parameters); per-tensor: ORT rejects per-row / per-column zero points. The status
 * differences left (docs/peers.md's ORT classes 4 and 5) are counted; no value may differ. */
Test(peer_profiles, onnxruntime_is_ort_fp32_on_its_cpu)
{
    const char *src = env("QMM_SOURCE_DIR");
    char spec[2048], cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s/.venv/bin/python' -c 'import onnxruntime' 2>/dev/null", src);
    if (system(cmd) != 0)
        cr_skip_test("%s/.venv has no onnxruntime: run scripts/pydeps.sh", src);
    const measured *m = on_this_cpu("ONNX Runtime", ort_measured);
    snprintf(spec, sizeof spec, "exec:%s/.venv/bin/python %s/peers/onnxruntime/backend.py", src,
             src);
    /* docs/peers.md's ORT classes 4 and 5: valid one-element zero points of rank > 1 rejected
     * ("... zero point must be a scalar or 1D tensor of size 1", "B zero point is not
     * valid"), invalid scales accepted */
    static const char *const known[] = {"zero point must be a scalar",
                                        "B zero point is not valid",
                                        "]: must be finite and > 0", NULL};
    /* u8s8s8 has no ORT CPU kernel (NOT_IMPLEMENTED, skipped): u8s8u8 only */
    expect_profile_but(m->profile, spec, "u8s8u8,per-tensor,nonempty", ORT_CHUNK, WANT_COMPARED,
                       known, "");
    expect_profile_but(m->profile, spec, "u8s8,per-tensor,nonempty", ORT_CHUNK, WANT_COMPARED,
                       known, "");
    expect_fingerprint(m, spec, "");
}
