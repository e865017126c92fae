/* harness/invoke/strays.h — processes a backend leaves behind outside its worker.
 *
 * A worker runs in a process group of its own, which is killed whenever the worker ends. A
 * child that leaves the group (setsid) outlived it: reparented to init, it could rewrite a
 * report after qmmcheck exited. qmmcheck makes itself a child subreaper, so that every
 * orphan below it becomes its child instead of init's, and kills them before the reports. */
#ifndef QMM_HARNESS_STRAYS_H
#define QMM_HARNESS_STRAYS_H

#include <sys/types.h>

/* From the command's own process, once: orphans below it become its children
 * (PR_SET_CHILD_SUBREAPER), and its memory and open files are closed to same-user processes
 * that are not root (PR_SET_DUMPABLE 0: a worker can no longer open /proc/PPID/fd/1 to
 * write lines into qmmcheck's standard output). Also kills any strays at exit. */
void qh_strays_watch(void);

/* A child this process started and will wait for (a worker, an exec: process, a qemu probe):
 * never a stray while owned. Disowned once it has been waited for. */
void qh_strays_own(pid_t pid);
void qh_strays_disown(pid_t pid);

/* Kills (SIGKILL) and reaps every child of this process that it neither owns nor started with,
 * and the children they leave in turn, until none is left (at most a bounded number of
 * rounds). Returns how many it killed. */
int qh_strays_end(void);

/* Reaps, without waiting, the children that were in process group `pgid` (a worker's killed
 * group, adopted as orphans), so that a long run does not gather zombies. */
void qh_strays_reap_group(pid_t pgid);

#endif /* QMM_HARNESS_STRAYS_H */
