/* harness/cli/interrupt.h — SIGINT and SIGTERM for the commands that work long (run, diff,
 * reduce): the first signal asks the command to stop (qh_interrupted, harness/invoke/invoke.h),
 * which ends every wait on a worker or an exec: process within 50 ms and the reference's
 * computation under way at its next element; the command then says what it did and exits
 * 128 + the signal. A second signal while it shuts down exits at once. */
#ifndef QMM_HARNESS_CLI_INTERRUPT_H
#define QMM_HARNESS_CLI_INTERRUPT_H

/* Installs the handlers (no SA_RESTART, so a blocking wait returns EINTR and sees the flag).
 * Call it before the backends open, so that a hello that hangs is interrupted too. */
void qh_interrupt_install(void);

/* "SIGINT", "SIGTERM" or "signal N", for the line that says the command was interrupted. */
const char *qh_interrupt_name(int sig);

#endif /* QMM_HARNESS_CLI_INTERRUPT_H */
