/* testquantity.h - what the quantity tests and the fuzz oracle need of a
 * quantity that the engine itself never asks. */
#ifndef DRA_GUARD_TESTQUANTITY_H
#define DRA_GUARD_TESTQUANTITY_H

#include <stdint.h>

#include "quantity.h"

/* The value as an int64 when it is a whole number in range: 0, or -ERANGE
 * (*out untouched). */
int testquantity_to_int64(const struct quantity *q, int64_t *out);

#endif
