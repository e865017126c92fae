/* harness/io/casedir.h — writing one ONNX node-test case directory, and the mkdir -p under it.
 *
 * Every writer of case directories goes through here: `qmmcheck export` and `qmmcheck diff`
 * (through qh_problem_write_dir, harness/gen/problem.h), the fuzz targets' reproducers
 * (fuzz/differential.c), and the corpus tool's output folders (fuzz/make_corpus.c).
 * The layout is docs/formats.md's:
 *
 *   DIR/model.onnx
 *   DIR/test_data_set_0/input_0.pb ...   the present inputs, in node order
 *   DIR/test_data_set_0/output_0.pb      when there is an expected output
 *   DIR/qmm.meta                         when there is a meta
 */
#ifndef QMM_HARNESS_CASEDIR_H
#define QMM_HARNESS_CASEDIR_H

#include <stdint.h>

#include "harness/io/meta.h"
#include "harness/io/onnx_io.h"
#include "qmm/qmm.h"

/* Creates `path` and its missing parents (mode 0755). An existing component must be a
 * directory; an existing `path` must not be a symbolic link (what is written into it must land
 * where it was named), while links among its parents are followed, as the user named them.
 * -1 with err naming the offending path. */
int qh_mkdirs(const char *path, qh_error *err);

/* One case. The caller fills `model` but for the node's inputs and the graph's inputs, which
 * qh_casedir_write fills from `inputs` / `input_names` (the operator's n_inputs inputs in node
 * order; an absent one is "" in the node and has no file; trailing absent ones are dropped).
 * output_0.pb is named after model->outputs[0]. */
typedef struct qh_casedir {
    qh_model *model;
    int32_t n_inputs;
    const qmm_tensor *const *inputs;
    const char *const *input_names;
    const qmm_tensor *output; /* output_0.pb, or NULL */
    const qh_meta *meta;      /* qmm.meta (its free text cleaned to one line), or NULL */
} qh_casedir;

/* Writes the case into `dir`, creating it (qh_mkdirs). 0, or -1 with err naming the path. */
int qh_casedir_write(const char *dir, const qh_casedir *c, qh_error *err);

/* A graph input or output of tensor t's type; its shape when shape_known, else none. */
void qh_value_info_of(qh_value_info *v, const char *name, const qmm_tensor *t, int shape_known);

#endif /* QMM_HARNESS_CASEDIR_H */
