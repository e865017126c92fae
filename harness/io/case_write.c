/* harness/io/case_write.c — writing a call as an ONNX node-test directory (case.h), through
 * casedir.h: the operator's inputs in node order under their ONNX names. */
#include "harness/io/case.h"

#include <stdio.h>

#include "harness/io/casedir.h"
#include "ops/qmm_ops.h"

int qh_call_write_dir(const char *dir, const qmm_call *call, qh_model *m,
                      const qmm_tensor *output, const qh_meta *meta, qh_error *err)
{
    const qmm_op_desc *d = qmm_call_desc(call);
    if (!d) {
        snprintf(err->msg, sizeof err->msg, "%s: the call has no operator", dir);
        return -1;
    }
    const qmm_tensor *ins[QMM_MAX_OP_INPUTS];
    const char *names[QMM_MAX_OP_INPUTS];
    for (int32_t i = 0; i < d->n_inputs; i++) {
        ins[i] = qmm_call_input_c(call, i);
        names[i] = d->inputs[i].name;
    }
    qh_casedir c = {.model = m, .n_inputs = d->n_inputs, .inputs = ins, .input_names = names,
                    .output = output, .meta = meta};
    return qh_casedir_write(dir, &c, err);
}
