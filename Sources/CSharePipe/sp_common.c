#include "sp_common.h"
#include <stdlib.h>

void sp_free(void *pointer) { free(pointer); }
