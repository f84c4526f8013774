#ifndef SP_COLOR_H
#define SP_COLOR_H

#include "sp_common.h"

/// A Little CMS transform from an embedded CMYK profile to sRGB; opaque to Swift.
typedef struct sp_color_transform sp_color_transform;

/// Builds a transform from 8-bit CMYK described by `icc` (the JPEG's embedded profile) to 8-bit sRGB,
/// perceptual intent. `inverted`: the samples are stored as 255 − ink (Adobe APP14, as Photoshop writes).
/// Fails with SP_ERR_LIBRARY and Little CMS's message when the profile cannot be parsed or is not a CMYK
/// input profile. Nothing is written to stderr and nothing exits.
sp_status sp_color_cmyk_to_srgb_create(const uint8_t *icc, size_t length, int inverted,
                                       sp_color_transform **out, char *message);
/// Converts `pixels` CMYK pixels (4 bytes each) to RGB (3 bytes each).
void sp_color_transform_row(sp_color_transform *transform, const uint8_t *cmyk, uint8_t *rgb, size_t pixels);
/// Destroys the transform (NULL is allowed).
void sp_color_transform_free(sp_color_transform *transform);

#endif
