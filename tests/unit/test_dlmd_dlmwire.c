/*
 * dlmd's node-to-node message types: every type dlmd handles has a name
 * for its logs (the value block's LVB_BACKUP and LVB_FORGET once had
 * none and were logged as "?"), and every named type has a handler.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "dlmd/dlmd.h"

/* netd types are 16 bits; dlmd's are o2dlm's, from 500. */
#define TYPE_LIMIT	65536

Test(dlmwire, every_handled_type_has_a_name)
{
	uint32_t t;
	int handled = 0;

	dlmd_handlers_init();
	for (t = 0; t < TYPE_LIMIT; t++) {
		if (wire_handler_find(t) == NULL)
			continue;
		handled++;
		cr_expect_str_neq(wire_type_name(t), "?",
		    "message type %u has a handler but no name", t);
	}
	cr_assert_gt(handled, 0);
}

Test(dlmwire, every_named_type_has_a_handler)
{
#define EXPECT_HANDLED(name, num)					\
	cr_expect_not_null(wire_handler_find(num), "%s has no handler", #name); \
	cr_expect_str_eq(wire_type_name(num), #name);
	dlmd_handlers_init();
	DLMWIRE_TYPES(EXPECT_HANDLED)
#undef EXPECT_HANDLED
	cr_expect_str_eq(wire_type_name(WIRE_LVB_BACKUP), "LVB_BACKUP");
	cr_expect_str_eq(wire_type_name(0), "?");
}
