/* harness/cli/interrupt.c — SIGINT and SIGTERM for the long commands (interrupt.h). */
#include "harness/cli/interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/invoke/invoke.h"
#include "reference/qmm_reference.h"

static void on_interrupt(int sig)
{
    if (qh_interrupted)
        _exit(128 + sig);
    qh_interrupted = sig;
}

void qh_interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    qmm_ref_set_stop_flag(&qh_interrupted); /* the expectation, and the reference backend */
}

const char *qh_interrupt_name(int sig)
{
    static char buf[24];
    if (sig == SIGINT)
        return "SIGINT";
    if (sig == SIGTERM)
        return "SIGTERM";
    snprintf(buf, sizeof buf, "signal %d", sig);
    return buf;
}
