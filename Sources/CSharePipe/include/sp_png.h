#ifndef SP_PNG_H
#define SP_PNG_H

#include "sp_common.h"

/// A libpng read struct with its error state and input; opaque to Swift.
typedef struct sp_png_reader sp_png_reader;

/// Limits libpng enforces itself, as a second line behind the checks the Swift side makes on the header.
typedef struct {
    uint32_t max_width;         // png_set_user_limits: larger IHDR widths are refused inside libpng
    uint32_t max_height;
    size_t max_chunk_bytes;     // png_set_chunk_malloc_max: caps any chunk libpng allocates (and iCCP inflation)
} sp_png_reader_limits;

/// What libpng does with ancillary chunks while reading.
typedef enum {
    SP_PNG_READ_PIXELS = 0,     // skip every ancillary chunk except tRNS (rendering: no iCCP/zTXt inflation)
    SP_PNG_READ_ICC = 1         // as above, but parse iCCP so sp_png_reader_icc can hand out the profile
} sp_png_read_mode;

/// The IHDR, as libpng validated it.
typedef struct {
    uint32_t width;
    uint32_t height;
    int bit_depth;              // as stored: 1, 2, 4, 8 or 16
    int color_type;             // PNG colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA
    int interlaced;             // 1 for Adam7
    int has_trns;               // a valid tRNS chunk was read
} sp_png_header;

/// The rows sp_png_reader_read_row hands out after expansion (palette → RGB, gray 1/2/4 → 8, tRNS → alpha).
typedef struct {
    int channels;               // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
    int bit_depth;              // 8, or 16 (samples big-endian, as stored)
    size_t row_bytes;           // bytes of one full-width row
    int passes;                 // 1, or 7 for Adam7: each pass visits every row (see sp_png_reader_read_row)
} sp_png_output;

/// Opens a reader on a file, read through a small stdio buffer (the file is never loaded whole).
sp_status sp_png_reader_open_file(const char *path, sp_png_reader_limits limits, sp_png_read_mode mode,
                                  sp_png_reader **out, char *message);
/// Opens a reader on caller-owned bytes that must outlive the reader.
sp_status sp_png_reader_open_memory(const uint8_t *data, size_t length, sp_png_reader_limits limits,
                                    sp_png_read_mode mode, sp_png_reader **out, char *message);
/// Reads the signature and every chunk up to the first IDAT; fills in the header. No pixel memory yet.
sp_status sp_png_reader_read_info(sp_png_reader *reader, sp_png_header *header, char *message);
/// The decompressed ICC profile (SP_PNG_READ_ICC mode, after read_info); 1 when present, else 0.
/// The bytes belong to the reader and stay valid until sp_png_reader_free.
int sp_png_reader_icc(const sp_png_reader *reader, const uint8_t **profile, uint32_t *length);
/// Sets up the expansions and interlace handling and calls png_read_update_info (which sizes libpng's
/// own row buffers: call only after the caller has checked the header against its limits).
sp_status sp_png_reader_start(sp_png_reader *reader, sp_png_output *output, char *message);
/// Reads the next row into `row` (output.row_bytes bytes). For an interlaced image every pass visits
/// every row: a call writes only the pixels of the current pass into `row` (libpng's "sparkle" mode) and
/// leaves the others alone, and rows the pass does not touch may be given as NULL.
sp_status sp_png_reader_read_row(sp_png_reader *reader, uint8_t *row, char *message);
/// Reads the chunks after the image data up to IEND; errors here mean a damaged or truncated tail.
sp_status sp_png_reader_finish(sp_png_reader *reader, char *message);
// 1 when the zlib stream went on after the last row (the read stopped there, the rows are whole) or libpng
// found compressed data or IDAT chunks after the image.
int sp_png_reader_tail_cut(const sp_png_reader *reader);
/// Number of warnings libpng emitted (benign errors it recovered from), and the last one's text.
int sp_png_reader_warning_count(const sp_png_reader *reader, char *last_warning);
/// Destroys the read struct and closes the file, if any.
void sp_png_reader_free(sp_png_reader *reader);

/// One chunk the encoder writes verbatim (libpng computes its CRC).
typedef struct {
    uint32_t type;              // the four type bytes, big-endian: 'gAMA' is 0x67414D41
    size_t offset;              // where the payload starts in the shared `chunk_data` block
    size_t length;
    int before_palette;         // 1: right after IHDR (colour chunks); 0: after PLTE/tRNS, before IDAT
} sp_png_chunk;

/// The stored form of the encoded image.
typedef struct {
    int color_type;             // 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA
    int bit_depth;              // 8; palette images 1, 2, 4 or 8 (one index per byte in `pixels`)
    const uint8_t *palette;     // palette_count RGB triples (colour type 3)
    int palette_count;
    const uint8_t *palette_alpha;   // tRNS: alpha of the first palette_alpha_count entries (may be 0)
    int palette_alpha_count;
} sp_png_image_format;

/// `sp_png_encode_settings.filter` for libpng's per-row choice (minimum sum of absolute differences over
/// all five filter types, computed for every row).
#define SP_PNG_FILTER_ADAPTIVE (-1)

/// Compression settings.
typedef struct {
    int zlib_level;             // 0...9
    int filter;                 // one PNG filter type for every row: 0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth;
                                // or SP_PNG_FILTER_ADAPTIVE
} sp_png_encode_settings;

/// The one filter type (0...4) whose rows compress smallest on a sample of the image: each type's encode
/// (zlib level 1) of four strips of 12 rows spread over the image, each led by the row above it, or of the
/// whole image when it is at most 52 rows tall; ties go to the lower type. 8-bit gray, gray+alpha, RGB and
/// RGBA only (not palette). The sample costs about a fifth of one zlib 1 encode of the image.
sp_status sp_png_choose_filter(const uint8_t *pixels, int width, int height, int color_type, int *filter,
                               char *message);

/// Encodes a whole 8-bit bitmap (rows tightly packed: width × channels bytes, or width indices) to PNG in
/// memory. `icc` (may be NULL) becomes a compressed iCCP chunk; `chunks` are written verbatim where their
/// `before_palette` says. On success *out is malloc'ed and freed with sp_free.
sp_status sp_png_encode(const uint8_t *pixels, int width, int height, sp_png_image_format format,
                        sp_png_encode_settings settings, const uint8_t *icc, size_t icc_length,
                        const uint8_t *chunk_data, const sp_png_chunk *chunks, int chunk_count,
                        uint8_t **out, size_t *out_length, char *message);

#endif
