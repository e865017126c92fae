/* harness/cli/datadir.h — where `qmmcheck run` finds its suites when no --vectors is given. */
#ifndef QMM_HARNESS_DATADIR_H
#define QMM_HARNESS_DATADIR_H

/* The vector tree `run` uses by default: the installed suites next to the running executable
 * (its directory, then the path from the install's bin to its share/qmm/vectors), the source
 * tree's vectors/ for a qmmcheck run from its build tree, else the suites under the prefix it
 * was built for. Prints on stderr which tree and which suites it chose, or, returning NULL,
 * every place it looked. The path stays valid until the process ends. */
const char *qh_default_vectors(void);

#endif /* QMM_HARNESS_DATADIR_H */
