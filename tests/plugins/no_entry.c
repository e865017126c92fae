/* tests/plugins/no_entry.c — a shared library that forgot to export qmm_backend_open. */
int qmm_backend_opne(void);
int qmm_backend_opne(void)
{
    return 0;
}
