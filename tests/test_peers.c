/* tests/test_peers.c — the peers over oneDNN, XNNPACK and gemmlowp (peers/): each loads and
 * names its library and version, declines with a reason what its library cannot express, and
 * computes a small hand-checked case right through `qmmcheck run`.
 *
 * A peer whose library was not found at configure time has an empty QMM_PEER_<NAME> and its
 * tests skip. Whether a peer passes the edge suites is not asserted here: a library may
 * legitimately differ from the spec (docs/peers.md), and those differences are recorded, not
 * hidden. */
#include <dlfcn.h>

#include "tests/casefile_support.h"
#include "tests/cli_support.h"

#include "qmm/qmm.h"

TestSuite(peers, .init = make_tmp, .fini = remove_tmp);

/* The plugin's path, or NULL (the test skips) when it was not built. */
static const char *peer_lib(const char *var)
{
    const char *p = getenv(var);
    if (!p || !*p) {
        cr_skip_test("%s was not built (its library is missing)", var);
        return NULL;
    }
    return p;
}

typedef struct opened {
    void *dl;
    qmm_backend *be;
} opened;

static opened open_peer(const char *lib, uint32_t abi, const char *options, qmm_status *st)
{
    opened o = {dlopen(lib, RTLD_NOW | RTLD_LOCAL), NULL};
    cr_assert(o.dl, "dlopen %s: %s", lib, dlerror());
    qmm_backend_open_fn open_fn = (qmm_backend_open_fn)dlsym(o.dl, QMM_PLUGIN_ENTRY);
    cr_assert(open_fn, "%s exports no %s", lib, QMM_PLUGIN_ENTRY);
    o.be = open_fn(abi, options, st);
    return o;
}

static void close_peer(opened *o)
{
    if (o->be)
        o->be->close(o->be);
    /* not dlclose'd: oneDNN and XNNPACK keep process-wide state */
}

/* Opens the peer, checks its name and that its description names `library` and `version`;
 * also that a wrong ABI and an unknown option are refused as backend.h says (the ABI in the
 * words of qmm_backend_abi_check, which every backend in the tree shares). */
static opened expect_loads(const char *lib, const char *name, const char *library,
                           const char *version)
{
    qmm_status st;
    opened bad = open_peer(lib, QMM_ABI_VERSION + 1, "", &st);
    cr_expect(bad.be == NULL && st.code == QMM_UNSUPPORTED, "wrong ABI accepted: %s", st.message);
    char want[128];
    snprintf(want, sizeof want, "%s: built for qmm ABI %u, the harness speaks ABI %u", name,
             (unsigned)QMM_ABI_VERSION, (unsigned)QMM_ABI_VERSION + 1);
    cr_expect_str_eq(st.message, want);
    bad = open_peer(lib, QMM_ABI_VERSION, "threads=2", &st);
    cr_expect(bad.be == NULL && st.code == QMM_INVALID_ARGUMENT, "unknown option: %s", st.message);
    opened o = open_peer(lib, QMM_ABI_VERSION, "", &st);
    cr_assert(o.be, "open failed: %s", st.message);
    cr_expect_str_eq(o.be->name, name);
    cr_expect(strstr(o.be->description, library) && strstr(o.be->description, version),
              "'%s' does not name %s %s", o.be->description, library, version);
    return o;
}

/* A 2-D QLinearMatMul call over the given buffers; per-tensor float parameters. */
typedef struct qcall {
    qmm_call call;
    unsigned char a[6], b[6], y[4], za, zb, zy;
    float sa, sb, sy;
} qcall;

static void make_qcall(qcall *c, int32_t ta, int32_t tb, int32_t ty, float sa, float sb, float sy)
{
    memset(c, 0, sizeof *c);
    c->sa = sa;
    c->sb = sb;
    c->sy = sy;
    qmm_qlinearmatmul *q = &c->call.u.qlinearmatmul;
    c->call.op = QMM_OP_QLINEARMATMUL;
    q->opset = 10;
    q->a = (qmm_tensor){ta, 2, {2, 3}, c->a};
    q->b = (qmm_tensor){tb, 2, {3, 2}, c->b};
    q->y = (qmm_tensor){ty, 2, {2, 2}, c->y};
    q->a_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &c->sa};
    q->b_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &c->sb};
    q->y_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 0, {0}, &c->sy};
    q->a_zero_point = (qmm_tensor){ta, 0, {0}, &c->za};
    q->b_zero_point = (qmm_tensor){tb, 0, {0}, &c->zb};
    q->y_zero_point = (qmm_tensor){ty, 0, {0}, &c->zy};
}

/* The backend answers UNSUPPORTED, with a message containing `why`, from `query` (via
 * query) or from the operator function (via_op). */
static void expect_unsupported(const qmm_backend *be, qmm_call *call, int via_op, const char *why)
{
    qmm_status st = {0};
    qmm_status_code rc = via_op ? qmm_backend_run(be, call, &st) : be->query(be, call, &st);
    cr_expect_eq(rc, QMM_UNSUPPORTED, "%s answered %s: %s", be->name, qmm_status_name(rc),
                 st.message);
    cr_expect(strstr(st.message, why) != NULL, "'%s' does not say '%s'", st.message, why);
}

/* The hand-checked case: a = [[2,2,3],[4,5,6]], za = 1, b = [[1,0],[2,1],[0,3]], zb = 0, so
 * acc = (a-1)·b = [[3,7],[11,19]]; with sa·sb/sy = 1/4 that is 0.75 1.75 2.75 4.75 (no tie),
 * rounded 1 2 3 5, plus zy = 10: y = [[11,12],[13,15]]. MatMulInteger gives acc itself. */
static const unsigned char hand_a[6] = {2, 2, 3, 4, 5, 6}, hand_b[6] = {1, 0, 2, 1, 0, 3};

static char *write_hand_case(int integer, int32_t tb)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/hand-%s", tmpdir, integer ? "integer" : "qlinear");
    char set[600];
    snprintf(set, sizeof set, "%s/test_data_set_0", dir);
    unsigned char za = 1, zb = 0, zy = 10;
    float sa = 0.25f, one = 1.0f;
    if (integer) {
        write_case_model(dir, "MatMulInteger", "hand", (const char *const[]){"A", "B", "a_zp", "b_zp"},
                         4, "Y");
        write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){2, 3}, hand_a, "A");
        write_tensor(set, "input_1.pb", tb, 2, (int64_t[]){3, 2}, hand_b, "B");
        write_tensor(set, "input_2.pb", QMM_DTYPE_UINT8, 0, NULL, &za, "a_zp");
        write_tensor(set, "input_3.pb", tb, 0, NULL, &zb, "b_zp");
        int32_t y[4] = {3, 7, 11, 19};
        write_tensor(set, "output_0.pb", QMM_DTYPE_INT32, 2, (int64_t[]){2, 2}, y, "Y");
        return dir;
    }
    const char *names[8] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                            "y_scale", "y_zero_point"};
    write_case_model(dir, "QLinearMatMul", "hand", names, 8, "y");
    write_tensor(set, "input_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){2, 3}, hand_a, "a");
    write_tensor(set, "input_1.pb", QMM_DTYPE_FLOAT, 0, NULL, &sa, "a_scale");
    write_tensor(set, "input_2.pb", QMM_DTYPE_UINT8, 0, NULL, &za, "a_zero_point");
    write_tensor(set, "input_3.pb", tb, 2, (int64_t[]){3, 2}, hand_b, "b");
    write_tensor(set, "input_4.pb", QMM_DTYPE_FLOAT, 0, NULL, &one, "b_scale");
    write_tensor(set, "input_5.pb", tb, 0, NULL, &zb, "b_zero_point");
    write_tensor(set, "input_6.pb", QMM_DTYPE_FLOAT, 0, NULL, &one, "y_scale");
    write_tensor(set, "input_7.pb", QMM_DTYPE_UINT8, 0, NULL, &zy, "y_zero_point");
    unsigned char y[4] = {11, 12, 13, 15};
    write_tensor(set, "output_0.pb", QMM_DTYPE_UINT8, 2, (int64_t[]){2, 2}, y, "y");
    return dir;
}

/* The case passes through the CLI: the peer's answer equals the hand value (and the stored
 * output agrees with the reference, or the verdict would be MISTRUSTED). */
static void expect_hand_case_passes(const char *lib, int integer, int32_t tb)
{
    char *dir = write_hand_case(integer, tb);
    char *out = qmmcheck_expect(0, "run --backend '%s' --vectors '%s'", lib, dir);
    expect_in(out, "passed:1 ");
    free(out);
}

Test(peers, onednn)
{
    const char *lib = peer_lib("QMM_PEER_ONEDNN");
    opened o = expect_loads(lib, "onednn", "oneDNN", "2.6.3");
    qcall c;
    make_qcall(&c, QMM_DTYPE_UINT8, QMM_DTYPE_INT8, QMM_DTYPE_UINT8, 1, 1, 1);
    /* per-row a scales: no output-scale mask along M (the query looks at shapes only) */
    float rows[2] = {1, 2};
    c.call.u.qlinearmatmul.a_scale = (qmm_tensor){QMM_DTYPE_FLOAT, 2, {2, 1}, rows};
    expect_unsupported(o.be, &c.call, 0, "per-row");
    /* per-row a zero points: oneDNN's source zero points are common only */
    unsigned char zrows[2] = {0, 0};
    c.call.u.qlinearmatmul.a_zero_point = (qmm_tensor){QMM_DTYPE_UINT8, 2, {2, 1}, zrows};
    expect_unsupported(o.be, &c.call, 0, "a_zero_point: only per-tensor");
    qmm_call ordered = {.op = QMM_OP_QORDEREDMATMUL};
    expect_unsupported(o.be, &ordered, 0, "QOrderedMatMul");
    close_peer(&o);
    expect_hand_case_passes(lib, 0, QMM_DTYPE_INT8);
    expect_hand_case_passes(lib, 1, QMM_DTYPE_INT8);
}

Test(peers, xnnpack)
{
    const char *lib = peer_lib("QMM_PEER_XNNPACK");
    opened o = expect_loads(lib, "xnnpack", "XNNPACK", "20220216");
    qcall c;
    make_qcall(&c, QMM_DTYPE_UINT8, QMM_DTYPE_INT8, QMM_DTYPE_UINT8, 1, 1, 1);
    expect_unsupported(o.be, &c.call, 0, "qu8");
    qmm_call integer = {.op = QMM_OP_MATMULINTEGER};
    expect_unsupported(o.be, &integer, 0, "no int32 output");
    /* a requantization scale of 256: XNNPACK's limit, in the message */
    make_qcall(&c, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, 16, 16, 1);
    expect_unsupported(o.be, &c.call, 1, "256");
    close_peer(&o);
    expect_hand_case_passes(lib, 0, QMM_DTYPE_UINT8);
}

Test(peers, gemmlowp)
{
    const char *lib = peer_lib("QMM_PEER_GEMMLOWP");
    opened o = expect_loads(lib, "gemmlowp", "gemmlowp", "20211220");
    qcall c;
    make_qcall(&c, QMM_DTYPE_INT8, QMM_DTYPE_INT8, QMM_DTYPE_INT8, 1, 1, 1);
    expect_unsupported(o.be, &c.call, 0, "uint8 x uint8 -> uint8 only");
    /* M = 1 needs a left shift the stage does not have */
    make_qcall(&c, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, QMM_DTYPE_UINT8, 1, 1, 1);
    expect_unsupported(o.be, &c.call, 1, "only shifts right");
    close_peer(&o);
    expect_hand_case_passes(lib, 0, QMM_DTYPE_UINT8);
}
