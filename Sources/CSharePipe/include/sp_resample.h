#ifndef SP_RESAMPLE_H
#define SP_RESAMPLE_H

#include <stdint.h>

// Fixed-point row kernels for the resampler's opaque layouts (gray, RGB), as libvips and pillow-simd do
// it: samples are int16, weights int16 with SP_RESAMPLE_WEIGHT_BITS fraction bits, sums int32. SSE2 on
// x86-64 (every x86-64 has it), plain C elsewhere; both give the same bits. No library calls, nothing that
// can fail.

/// Fraction bits of a weight: the weights of one output sum to 1 << 14 exactly.
#define SP_RESAMPLE_WEIGHT_BITS 14
/// Fraction bits of a horizontally filtered sample (the ring between the passes): 0...255 becomes 0...16320,
/// and Lanczos overshoot (at most about 1.3 × 255) still fits an int16.
#define SP_RESAMPLE_RING_BITS 6
/// Zero samples the horizontal kernels may read past an expanded row (whole groups of taps).
#define SP_RESAMPLE_ROW_PADDING 8

/// Expands `pixels` 8-bit pixels of `channels` (1 or 3) samples into int16 for the horizontal kernel: one
/// sample per pixel for gray, four (R, G, B, 0) for RGB.
void sp_resample_expand_row(const uint8_t *row, int pixels, int channels, int16_t *out);

/// The horizontal pass over one expanded row (`sp_resample_expand_row`, followed by
/// SP_RESAMPLE_ROW_PADDING zero pixels). Output `i` reads pixels `starts[i]`, … with `weights + i * stride`
/// (`counts[i]` of them, zero weights after up to a multiple of 8; `stride` a multiple of 8) and writes
/// `channels` samples with SP_RESAMPLE_RING_BITS fraction bits to `out + i * channels`; for RGB it also writes
/// one sample past the last output, so `out` needs one spare sample at its end.
void sp_resample_horizontal(const int16_t *in, int channels, const int32_t *starts, const int32_t *counts,
                            const int16_t *weights, int stride, int outputs, int16_t *out);

/// The vertical pass: `out[i]` = the sum over the taps of `weights[t] × rows[t][i]`, rounded from
/// SP_RESAMPLE_RING_BITS + SP_RESAMPLE_WEIGHT_BITS fraction bits and clamped to 0...255, for `length` samples.
void sp_resample_vertical(const int16_t *const *rows, const int16_t *weights, int taps, int length, uint8_t *out);

#endif
