/*
 * The level-caching rules of fsd's dlmglue and of dlmfs, after the
 * kernel's fs/ocfs2/dlmglue.c (ocfs2_highest_compat_lock_level) and
 * fs/ocfs2/dlmfs/userdlm.c (user_may_continue_on_blocked_lock).
 */
#include "o2dlm.h"

/* The highest level compatible with another node's request for `blocked`. */
int
dlmc_compat_level(int blocked)
{
	if (blocked == DLMC_EX)
		return DLMC_NL;
	if (blocked == DLMC_PR)
		return DLMC_PR;
	return DLMC_EX;
}

/* Do holders here keep us above dlmc_compat_level(blocked)? */
int
dlmc_holders_conflict(int ro_holders, int ex_holders, int blocked)
{
	if (blocked == DLMC_EX)
		return ro_holders + ex_holders > 0;
	return ex_holders > 0;
}

const char *
dlmc_level_name(int level)
{
	switch (level) {
	case DLMC_NL:
		return "NL";
	case DLMC_PR:
		return "PR";
	case DLMC_EX:
		return "EX";
	default:
		return "IV";
	}
}
