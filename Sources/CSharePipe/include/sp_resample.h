#ifndef SP_RESAMPLE_H
#define SP_RESAMPLE_H

#include <stdint.h>

// Fixed-point row kernels for the resampler (gray, RGB, RGBA), as libvips and pillow-simd do it: samples are
// int16, weights int16 with SP_RESAMPLE_WEIGHT_BITS fraction bits, sums int32. SSE2 on x86-64 (every x86-64
// has it), plain C elsewhere; both give the same bits. No library calls, nothing that can fail.

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

/// RGBA (straight alpha): premultiplies `pixels` 8-bit pixels exactly and lays them out in overlapping pairs
/// for sp_resample_horizontal_rgba: entry k (8 int16 at `out + 8 * k`) is pixels k and k + 1 interleaved,
/// [R_k R_k+1 G_k G_k+1 B_k B_k+1 A_k A_k+1], the pixel after the last being zero. A colour sample is c × a and
/// the alpha sample a × 255 (both 0...65025: exact, so a pixel of alpha 1 keeps its colour), less 32768 to fit
/// an int16; the bias cancels because each output's weights sum to exactly one.
void sp_resample_expand_rgba(const uint8_t *row, int pixels, int16_t *out);

/// The RGBA horizontal pass over pairs made by sp_resample_expand_rgba, whose entry 0 is input pixel `origin`.
/// Output `i` reads pixels `starts[i]`, … (`counts[i]` of them) with the weight pairs at
/// `weight_pairs + 8 * i * pair_stride`: pair j holds taps 2j and 2j + 1, each repeated over the four channels
/// ([w0 w1 w0 w1 w0 w1 w0 w1]; a zero weight after an odd count). It writes four floats to `out + 4 * i`, the
/// premultiplied colours (c × a / 255) and alpha on the 0...255 scale of the Float resampler.
void sp_resample_horizontal_rgba(const int16_t *pairs, int origin, const int32_t *starts, const int32_t *counts,
                                 const int16_t *weight_pairs, int pair_stride, int outputs, float *out);

/// The RGBA vertical pass and un-premultiplication: for `pixels` pixels, each float sample summed over the taps
/// in order (`weights[t] × rows[t][i]`, from 0, no fused multiply-add), then alpha clamped to 0...255, the
/// colours divided by it (none when it is at most 0.001) and every sample rounded to a byte, as the Float
/// resampler's `ResampleKernels.verticalSum` and `store` do, bit for bit.
void sp_resample_vertical_rgba(const float *const *rows, const float *weights, int taps, int pixels, uint8_t *out);

#endif
