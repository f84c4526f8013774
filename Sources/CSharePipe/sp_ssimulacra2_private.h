// What the SSIMULACRA2 scorer (sp_ssimulacra2.c) and its row kernels (sp_ssimulacra2_kernels.c) share, private to
// the shim.
#ifndef SP_SSIMULACRA2_PRIVATE_H
#define SP_SSIMULACRA2_PRIVATE_H

#include "sp_ssimulacra2.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SP_SSIM_X86 1
#endif

/// The Gaussian blur's radius (sigma 1.5, truncated at 5) and taps.
#define RADIUS 5
#define TAPS (2 * RADIUS + 1)
/// The bias of XYB's opsin absorbance (libjxl's opsin parameters; the matrix is the kernels').
#define SP_SSIM_OPSIN_BIAS 0.0037930732552754493f

/// One instruction set's row kernels (sp_ssimulacra2_kernels.h): each handles the first multiple of its width of
/// a row's samples and returns how many that is; the plain ones finish the row.
typedef struct {
    int (*to_xyb)(const float *, const float *, const float *, float *, float *, float *, int, int, float);
    int (*blur_horizontal)(const float *, float *, int, const float *);
    size_t (*blur_vertical)(const float *const *, float *, size_t, const float *);
    size_t (*blur_vertical_pair)(const float *const *, float *, float *, size_t, const float *);
    int (*pool)(const float *, const float *, const float *, const float *, const float *, const float *, int,
                float *);
    int (*halve_pairs)(const float *, float *, int, int);
    int (*rgb_to_linear)(const uint8_t *, const float *, float *, float *, float *, int);
} sp_ssimulacra2_kernels;

/// The widest kernels this CPU runs: AVX2 where cpuid reports it, else SSE2 on x86-64, else plain C.
sp_ssimulacra2_kernels sp_ssimulacra2_chosen_kernels(void);
/// The plain C kernels (every sample of a row).
extern const sp_ssimulacra2_kernels sp_ssimulacra2_plain;

#endif
