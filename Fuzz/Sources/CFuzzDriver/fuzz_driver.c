// Only the declaration in include/fuzz_driver.h matters; the definition comes from libclang_rt.fuzzer.a.
#include "fuzz_driver.h"
