/* tests/test_output.c — placeholder, replaced in this change. */
#include <criterion/criterion.h>

Test(test_output, placeholder) { cr_assert(1); }
