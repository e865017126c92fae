/* harness/io/case.h — finding case directories and loading one test data set as an operator call.
 *
 * A case directory holds model.onnx (one node) and test_data_set_N/ folders, plus an optional
 * qmm.meta. One data set of one directory is one case. One file per job: discover.c finds the
 * cases under a directory, case_load.c loads one, node_call.c maps a node to an operator call
 * and back, case_write.c writes a call as a case directory.
 */
#ifndef QMM_HARNESS_CASE_H
#define QMM_HARNESS_CASE_H

#include <signal.h>
#include <stddef.h>

#include "harness/base/call.h"
#include "harness/io/meta.h"
#include "harness/io/onnx_io.h"
#include "qmm/qmm.h"

/* ---- discovery (discover.c) ---- */

/* The largest N of test_data_set_N (at most 6 digits, no leading zero): discovery's rule and
 * repro --data-set's range. */
#define QH_MAX_DATA_SET 999999
/* What --data-set takes, in words, for every command's usage error. */
#define QH_DATA_SET_EXPECTED_(max) "expected 0.." #max " (test_data_set_N's N, as run finds them)"
#define QH_DATA_SET_EXPECTED_X(max) QH_DATA_SET_EXPECTED_(max)
#define QH_DATA_SET_EXPECTED QH_DATA_SET_EXPECTED_X(QH_MAX_DATA_SET)

/* How deep below the root discovery searches; a deeper directory is a QH_REF_TOO_DEEP ref. */
#define QH_MAX_DEPTH 32

/* Why discovery could not make a path into a case. Such a path is still listed, so that it is
 * counted and reported: loading it fails with a message naming the path and the reason. */
enum {
    QH_REF_OK = 0,      /* a case directory (or one with no data set, which loads as ERROR) */
    QH_REF_TOO_DEEP,    /* a directory past the depth limit, not searched */
    QH_REF_UNREADABLE,  /* a directory or entry that could not be read (problem_errno says why) */
    QH_REF_SET_NAME,    /* test_data_set_<something other than a plain N> */
    QH_REF_SET_NOT_DIR, /* test_data_set_N that is not a directory */
    QH_REF_LINK_UP,     /* a symbolic link to a directory that holds the root (not followed:
                           it would search all of that directory, / for a link to /) */
    QH_REF_SET_DIR,     /* test_data_set_N given as a case (repro's argument): its case is the
                           directory above it */
    QH_REF_NAME_AT,     /* a case directory named NAME@N: the name of data set N of case NAME,
                           so two cases would share a name (and an --xfail entry) */
    QH_REF_SET_SAME,    /* test_data_set_N that is the same directory as an earlier data set of
                           its case (a symbolic link): its data would be judged twice;
                           data_set: the one judged */
};

/* A case found on disk, before it is loaded. */
typedef struct qh_case_ref {
    char *dir;         /* the case directory (or the path a problem is about), as reachable
                        * from the working directory */
    char *name;        /* stable display name: path relative to the --vectors root [@N] */
    int data_set;      /* N of test_data_set_N, or -1 when the directory has none */
    int problem;       /* QH_REF_*: 0 for an ordinary case */
    int problem_errno; /* the errno behind QH_REF_UNREADABLE */
} qh_case_ref;

typedef struct qh_case_list {
    qh_case_ref *items;
    size_t count, cap;
} qh_case_list;

/* Appends every case under `root` (recursively, sorted by name within each directory, real
 * subdirectories before symlinks; each directory entered once, by device and inode, so
 * symlinks back up the tree add nothing; a symlink to a directory above the root is not
 * followed: a QH_REF_LINK_UP ref). `root` may itself be a case directory. A directory
 * with any model.onnx entry is a case directory. What cannot be searched below the root (too
 * deep, unreadable, a badly named data set) is appended as a ref with `problem` set, whose
 * load fails naming it. -1 with err only when root itself cannot be read. `stop` (NULL:
 * none) is looked at before each directory: once nonzero (a signal), the search ends where
 * it is, with 0 and the cases found so far. */
int qh_discover(const char *root, qh_case_list *list, const volatile sig_atomic_t *stop,
                qh_error *err);
void qh_case_list_free(qh_case_list *list);

/* What discovery makes of `path` as an entry of its parent directory, for repro, which is given
 * one path: QH_REF_SET_NAME or QH_REF_SET_NOT_DIR for a test_data_set_* entry of a case
 * directory that discovery reports as such, QH_REF_NAME_AT for a case directory named NAME@N
 * (so that the __REPRO: line of such a row shows its ERROR again), QH_REF_SET_DIR for a data
 * set directory given as a case (*data_set set to its N; one that is a symbolic link to
 * another data set of its case, a QH_REF_SET_SAME row of run's, names the one it is),
 * QH_REF_OK for anything else. */
int qh_classify_path(const char *path, int *data_set);

/* Whether the last name of `dir` (trailing '/' ignored) ends in @N, N decimal digits: how run
 * names data set N of the case named by the rest, so no case directory may be so named. */
int qh_name_like_a_data_set(const char *dir);

/* ---- loading (case_load.c) ---- */

/* The memory a case's tensor files may take while they are read and kept: half this machine's
 * memory (at least 1 GiB), or QH_CASE_MEMORY from the environment (a size: 1000, 512M; 0 when
 * it is not one, which the load says). A case past it is an
 * ERROR naming the file, where it was the whole run that the kernel's OOM killer ended (a
 * sparse file of 136 KB held 1 GiB of raw_data). */
uint64_t qh_case_memory(void);

/* A loaded case: the model, the sidecar, the stored outputs and the call built from the stored
 * inputs, as the harness's owned call (harness/base/call.h): oc.call's input tensors point into
 * the buffers oc owns (`inputs` keeps their names and shapes; its data pointers are those
 * buffers, not owned); its y tensor has dtype and shape set when the geometry is valid
 * (oc.y_shape_known), and data NULL (the caller allocates output buffers). */
typedef struct qh_case {
    qh_model model;
    qh_meta meta;
    int32_t n_inputs;
    qh_tensor inputs[QH_MAX_IO];
    int32_t n_outputs;
    qh_tensor outputs[QH_MAX_IO];
    qh_owned_call oc;
    int64_t opset;
} qh_case;

/* Loads data set `ref->data_set` of `ref->dir`. Errors name the file and field. */
int qh_case_load(const qh_case_ref *ref, qh_case *c, qh_error *err);
void qh_case_free(qh_case *c);

/* ---- a node and its call (node_call.c) ---- */

/* The call's output tensor (y) for any operator. */
qmm_tensor *qh_call_output(qmm_call *call);

/* Builds a call from tensors in node-input order (absent optional inputs have dtype
 * QMM_DTYPE_UNDEFINED). Used by the loader and by the generators. -1 with err when the
 * operator is unknown or a required input is missing. */
int qh_call_build(const char *op_type, const char *domain, int64_t opset,
                  const qmm_tensor *const *inputs, int32_t n_inputs, qmm_call *call,
                  qh_error *err);

/* As qh_call_build, with the node's attributes (QOrderedMatMul needs its three INT order
 * attributes; a missing, mistyped or unknown one is an error). qh_call_build passes none. */
int qh_call_build_node(const char *op_type, const char *domain, int64_t opset,
                       const qmm_tensor *const *inputs, int32_t n_inputs, const qh_attr *attrs,
                       int32_t n_attrs, qmm_call *call, qh_error *err);

/* The other way: the model whose node loads back as `call` (qh_call_build_node's inverse):
 * op_type and domain, the opset imports (another domain's with the ai.onnx opset of its era),
 * the attributes (an optional one at its default left out: absent means the default, and an
 * older opset may not define it), and the output named as the operator names it, with y's
 * value info (its shape when y_shape_known). Leaves the producer, the graph's name and the
 * inputs alone. */
void qh_call_model(const qmm_call *call, const qmm_tensor *y, int y_shape_known, qh_model *m);

/* ---- writing (case_write.c) ---- */

/* Writes `call` as an ONNX node-test directory (harness/io/casedir.h): `m` (from qh_call_model)
 * with the call's inputs in node order under their ONNX names, `output` as output_0.pb when
 * not NULL, `meta` as qmm.meta when not NULL. */
int qh_call_write_dir(const char *dir, const qmm_call *call, qh_model *m,
                      const qmm_tensor *output, const qh_meta *meta, qh_error *err);

#endif /* QMM_HARNESS_CASE_H */
