/* qmm/qmm.h — the whole operator interface; the only header a vendor needs. */
#ifndef QMM_QMM_H
#define QMM_QMM_H

#include "qmm/tensor.h"
#include "qmm/status.h"
#include "qmm/ops.h"
#include "qmm/backend.h"

#endif /* QMM_QMM_H */
