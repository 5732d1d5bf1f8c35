/*
 * The level-caching rules fsd's dlmglue and dlmfs share (o2dlm/level.c):
 * how far a BAST for each mode takes a cached lock down, and when local
 * holders stand in the way.
 */
#include <criterion/criterion.h>

#include "o2dlm.h"

Test(level, compat_level_of_each_blocked_mode)
{
	cr_expect_eq(dlmc_compat_level(DLMC_EX), DLMC_NL);
	cr_expect_eq(dlmc_compat_level(DLMC_PR), DLMC_PR);
	/* NL blocks nobody: EX may stay. */
	cr_expect_eq(dlmc_compat_level(DLMC_NL), DLMC_EX);
}

Test(level, holders_in_the_way)
{
	/* Another node wants EX: any holder here is in the way. */
	cr_expect(dlmc_holders_conflict(1, 0, DLMC_EX));
	cr_expect(dlmc_holders_conflict(0, 1, DLMC_EX));
	cr_expect_not(dlmc_holders_conflict(0, 0, DLMC_EX));
	/* It wants PR: only EX holders are. */
	cr_expect_not(dlmc_holders_conflict(3, 0, DLMC_PR));
	cr_expect(dlmc_holders_conflict(0, 1, DLMC_PR));
}

Test(level, names)
{
	cr_expect_str_eq(dlmc_level_name(DLMC_NL), "NL");
	cr_expect_str_eq(dlmc_level_name(DLMC_PR), "PR");
	cr_expect_str_eq(dlmc_level_name(DLMC_EX), "EX");
	cr_expect_str_eq(dlmc_level_name(-1), "IV");
}
