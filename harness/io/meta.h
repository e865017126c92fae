/* harness/io/meta.h — the qmm.meta sidecar: what ONNX cannot say about a case (docs/architecture.md
 * §2, docs/formats.md).
 *
 * Format (docs/formats.md): UTF-8 text, one `key = value` per line; blank lines and lines
 * starting with '#' are ignored; keys are lower-case [a-z_]+; surrounding white space is
 * trimmed. Known keys:
 *   expect      OK | INVALID_ARGUMENT | UNSUPPORTED   (default OK: outputs are compared)
 *   tags        comma-separated words, e.g. "tie, odd-zp, u8u8u8"
 *   profile     semantics profile the stored outputs follow (default spec)
 *   provenance  free text: where the case came from
 *   description free text
 *   onnx_version the onnx release an extracted case came from
 *   seen_with   free text: the library, its version and the CPU a peer's divergence was seen
 *               with (vectors/peers/)
 *   cpu_class   comma-separated CPU classes (harness/io/cpuclass.h) the peer's divergence was
 *               measured on, e.g. "avx2" or "avx2, avx512-vnni" (vectors/peers/)
 * An unknown key is kept (for forward compatibility) but reported by qh_meta_unknown().
 * A line without '=' or a bad value for a known key is an error naming the line.
 */
#ifndef QMM_HARNESS_META_H
#define QMM_HARNESS_META_H

#include <stddef.h>

#include "harness/io/onnx_io.h"
#include "qmm/status.h"

#define QH_META_MAX_TAGS 32
#define QH_META_TEXT_MAX 512
#define QH_META_TAG_LEN 64

typedef struct qh_meta {
    qmm_status_code expect; /* QMM_OK unless the case expects an error status */
    int32_t n_tags;
    char tags[QH_META_MAX_TAGS][QH_META_TAG_LEN];
    char profile[64];
    char provenance[QH_META_TEXT_MAX];
    char description[QH_META_TEXT_MAX];
    char onnx_version[64];
    char seen_with[QH_META_TEXT_MAX];
    char cpu_class[128]; /* canonical: the names joined by ", "; "" when not given */
    int32_t n_unknown;       /* keys not listed above */
    char first_unknown[64];  /* the first of them */
} qh_meta;

/* Defaults: expect OK, no tags, profile "spec", empty texts. */
void qh_meta_init(qh_meta *m);

/* Parses `len` bytes of text. 0 on success, -1 with err naming `what` and the line. */
int qh_meta_parse(const char *text, size_t len, const char *what, qh_meta *m, qh_error *err);

/* Reads a qmm.meta file; a missing file leaves the defaults and returns 0. */
int qh_meta_read_file(const char *path, qh_meta *m, qh_error *err);

/* Serialises in the canonical form (known keys in the order above, only non-default ones).
 * Returns the number of bytes that would be written, like snprintf. */
int qh_meta_format(const qh_meta *m, char *buf, size_t size);

int qh_meta_has_tag(const qh_meta *m, const char *tag);

#endif /* QMM_HARNESS_META_H */
