#ifndef SP_SSIMULACRA2_H
#define SP_SSIMULACRA2_H

#include "sp_common.h"

// SSIMULACRA2 (Jon Sneyers, Cloudinary: the perceptual metric published with libjxl's tools): how close a
// distorted picture is to its reference, 100 for identical, 90 "visually lossless", 70 "high", 50 "medium",
// lower (even negative) for worse. Written from the published algorithm: both pictures go from sRGB to linear
// RGB to the positive XYB of the reference tool (opsin absorbance with its bias, cube root, X scaled by 14 and
// offset, B taken relative to Y); at six scales (each a 2 × 2 box average of the one before, in linear RGB) a
// Gaussian of sigma 1.5 (radius 5; zero past the left and right edges, mirrored at the top and bottom, as the PyPI
// `ssimulacra2` package does) gives the means and (co)variances of a modified SSIM (the mean term is
// 1 − (mu1 − mu2)², no C1), and two edge maps compare each picture's detail (|x − blurred x|): artefacts the
// distorted picture adds and detail it loses. Each map is pooled by its mean and its 4-norm per channel and
// scale, the 108 features are weighted by the published weights and mapped to the score. A channel whose six
// features at a scale all weigh under 0.01 (X and B at full size, B at the next two scales, the smallest scale)
// is not computed: together they move the score by well under 0.01, and cost two thirds of the full-size work.
//
// The scorer streams: rows go in top to bottom and each scale keeps only the 12 rows its blur needs (it blurs
// vertically two rows at a time) and 7 rows of XYB of the channels it scores (the smaller scales are fed as the
// rows above them come in), so the memory is about 0.9 KiB per pixel of width (`sp_ssimulacra2_bytes`), never a
// whole-image plane.

/// A scorer for one pair of pictures of one size.
typedef struct sp_ssimulacra2 sp_ssimulacra2;

/// The bytes a scorer for pictures `width` pixels wide holds (one allocation, the struct included).
size_t sp_ssimulacra2_bytes(int width, int height);

/// Makes a scorer for two pictures of `width` × `height`. SP_ERR_MEMORY when its allocation fails.
sp_status sp_ssimulacra2_new(int width, int height, sp_ssimulacra2 **scorer, char *message);

/// Feeds the next `count` rows of both pictures: 8-bit sRGB, `channels` samples a pixel (3: RGB; 4: RGBA whose
/// alpha is ignored, so composite first; 1: gray), `stride` bytes from one row to the next. Rows past the
/// height are ignored.
void sp_ssimulacra2_push_rows(sp_ssimulacra2 *scorer, const uint8_t *reference, const uint8_t *distorted,
                              int channels, size_t stride, int count);

/// The score, once every row went in (rows not fed count as black in both pictures). Pictures under 8 pixels
/// on a side have no scale to measure and score 100, as the reference tools say.
double sp_ssimulacra2_score(sp_ssimulacra2 *scorer);

void sp_ssimulacra2_free(sp_ssimulacra2 *scorer);

/// Scores two whole pictures in memory (`sp_ssimulacra2_push_rows` for the layout).
sp_status sp_ssimulacra2_compare(const uint8_t *reference, const uint8_t *distorted, int width, int height,
                                 int channels, size_t stride, double *score, char *message);

#endif
