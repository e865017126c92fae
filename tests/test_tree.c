/* tests/test_tree.c — placeholder, replaced in this change. */
#include <criterion/criterion.h>

Test(test_tree, placeholder) { cr_assert(1); }
