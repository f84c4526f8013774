#ifndef SP_AVIF_H
#define SP_AVIF_H

#include "sp_common.h"
#include "sp_heif.h"

/// A libavif decoder on one file or block of bytes, parsed; opaque to Swift. AVIF is read as Chromium reads
/// it: libavif with strict checks off, the source chosen by the file's major brand (an image sequence's
/// track for `avis`, else the primary item with its alpha item), a layered image (`a1lx`/`lsel`) decoded as
/// libavif selects it (the best layer the file offers). Transforms (`irot`, `imir`, `clap`) are reported,
/// never applied: the caller turns the pixels.
typedef struct sp_avif_reader sp_avif_reader;

/// The limits handed to libavif, which checks them while it parses (before any pixel is allocated), and
/// dav1d's thread count.
typedef struct {
    uint32_t max_pixels;        // width × height of one image
    uint32_t max_dimension;     // width or height
    uint32_t max_images;        // frames of a sequence (libavif stops reading the sample table past it)
    int threads;                // the AV1 decoder's threads
} sp_avif_options;

/// What the parse found. No pixels were decoded.
typedef struct {
    int width;                  // as coded (before irot/imir)
    int height;
    int depth;                  // 8, 10 or 12
    int chroma;                 // as heif_chroma: 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4
    int has_alpha;
    int premultiplied_alpha;
    int image_count;            // frames: 1 for a still image (a layered image is one image: its best layer)
    int irot_angle;             // anticlockwise quarter turns (0 without irot)
    int imir_mode;              // -1 without imir; 0 exchanges top and bottom, 1 left and right
    int has_clap;               // a clean aperture is given (not applied, as browsers show the image)
    size_t icc_length;
    size_t exif_length;         // as stored in the item (offset-prefixed TIFF)
    size_t xmp_length;
    sp_heif_nclx nclx;          // the CICP (colr nclx box, else the sequence header's), primaries derived
} sp_avif_info;

/// Opens and parses a file (read through libavif's file reader, one request at a time; never whole).
sp_status sp_avif_reader_open_file(const char *path, sp_avif_options options, sp_avif_reader **out, char *message);
/// The same on caller-owned bytes that must outlive the reader.
sp_status sp_avif_reader_open_memory(const uint8_t *data, size_t length, sp_avif_options options,
                                     sp_avif_reader **out, char *message);
/// The parse's facts.
sp_status sp_avif_reader_info(sp_avif_reader *reader, sp_avif_info *info, char *message);
/// Copies the ICC profile (0), Exif (1) or XMP (2) payload, exactly `length` bytes as `info` gave.
sp_status sp_avif_reader_copy_payload(sp_avif_reader *reader, int which, uint8_t *buffer, size_t length, char *message);
/// Decodes the next image (frame) into planes that stay valid until the next call or sp_avif_reader_free;
/// `duration_ms` is the frame's duration in milliseconds (rounded). SP_ERR_END after the last image.
sp_status sp_avif_reader_next_image(sp_avif_reader *reader, sp_heif_planes *planes, int *duration_ms,
                                    char *message);
/// Frees the decoder and closes the file.
void sp_avif_reader_free(sp_avif_reader *reader);

#endif
