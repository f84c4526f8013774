#ifndef FUZZ_DRIVER_H
#define FUZZ_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver (compiler-rt, LLVM 11 and later), linked by `-sanitize=fuzzer`. The fuzz targets call it
/// from their own `main` because SwiftPM renames an executable's entry point and points `main` at it
/// (`--defsym main=<Module>_main`), which hides the `main` inside libclang_rt.fuzzer.a.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
