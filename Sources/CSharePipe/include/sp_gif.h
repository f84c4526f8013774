#ifndef SP_GIF_H
#define SP_GIF_H

#include "sp_common.h"

// giflib's low-level (record by record) API behind status + message calls. giflib reports errors through
// return codes, never longjmp; every failure comes back here as a status and a message built from
// GifErrorString, with the byte offset and, where it can tell, the real cause (truncation, a bad LZW code size).

/// A giflib decoder reading a file or caller-owned bytes; opaque to Swift.
typedef struct sp_gif_reader sp_gif_reader;

/// The logical screen descriptor and global colour table (container-level properties).
typedef struct {
    int width;
    int height;
    int color_resolution;          // bits per primary colour, 1...8
    int background_index;
    int aspect_byte;               // pixel aspect ratio byte as stored (0: none given)
    int global_color_count;        // 0: no global colour table
    int global_sorted;             // the table's sort flag
    const uint8_t *global_colors;  // RGB triples, owned by the reader
} sp_gif_screen;

/// What comes next in the stream.
typedef enum {
    SP_GIF_RECORD_IMAGE = 1,       // an image descriptor: call sp_gif_reader_image
    SP_GIF_RECORD_EXTENSION = 2,   // an extension: call sp_gif_reader_extension_start
    SP_GIF_RECORD_TRAILER = 3,     // the ';' trailer
    SP_GIF_RECORD_END_OF_DATA = 4, // the data ended cleanly between records, without a trailer
    SP_GIF_RECORD_UNKNOWN = 5      // a byte that starts no block (junk, a second GIF appended without the
                                   // first one's trailer): the stream cannot go on; the message says where
} sp_gif_record;

/// One image descriptor (frame-level properties) and its local colour table.
typedef struct {
    int left;
    int top;
    int width;
    int height;
    int interlaced;
    int local_color_count;         // 0: no local colour table
    int local_sorted;
    const uint8_t *local_colors;   // RGB triples, owned by the reader; valid until the next image descriptor
} sp_gif_image;

/// Opens a reader on a file (read through stdio, never loaded whole) and reads the screen descriptor.
sp_status sp_gif_reader_open_file(const char *path, sp_gif_reader **out, sp_gif_screen *screen, char *message);
/// Opens a reader on caller-owned bytes that must outlive the reader, and reads the screen descriptor.
sp_status sp_gif_reader_open_memory(const uint8_t *data, size_t length, sp_gif_reader **out, sp_gif_screen *screen,
                                    char *message);
/// Reads the next record's introducer (DGifGetRecordType). A byte that is no introducer is not an error
/// here: *record is SP_GIF_RECORD_UNKNOWN, the status SP_OK and the message names the byte and its offset,
/// so the caller can keep the frames before it, as browsers and gifsicle do.
sp_status sp_gif_reader_next_record(sp_gif_reader *reader, sp_gif_record *record, char *message);
/// Reads an extension's label and first data sub-block (DGifGetExtension). *block is NULL (length 0) when
/// the extension has no data; otherwise call sp_gif_reader_extension_next until it returns SP_ERR_END.
sp_status sp_gif_reader_extension_start(sp_gif_reader *reader, int *label, const uint8_t **block, int *length,
                                        char *message);
/// The next data sub-block of the current extension (payload without its length byte); SP_ERR_END at the terminator.
sp_status sp_gif_reader_extension_next(sp_gif_reader *reader, const uint8_t **block, int *length, char *message);
/// Reads an image descriptor and its local colour table (DGifGetImageDesc). giflib's per-frame bookkeeping
/// is released at once, so memory does not grow with the frame count.
sp_status sp_gif_reader_image(sp_gif_reader *reader, sp_gif_image *image, char *message);
/// Decodes the next row of the current image (DGifGetLine): `length` must be the image width. Rows come in
/// file order (for an interlaced image that is pass order; the caller places them).
sp_status sp_gif_reader_read_line(sp_gif_reader *reader, uint8_t *line, int length, char *message);
/// Skips the current image's LZW data without decoding it (DGifGetCode / DGifGetCodeNext).
sp_status sp_gif_reader_skip_image(sp_gif_reader *reader, char *message);
/// Bytes consumed so far (for messages).
long sp_gif_reader_offset(const sp_gif_reader *reader);
/// Closes giflib and the file, if any.
void sp_gif_reader_free(sp_gif_reader *reader);

/// A giflib encoder writing into a growable memory buffer or a file descriptor; opaque to Swift.
typedef struct sp_gif_writer sp_gif_writer;

/// Starts a GIF89a stream in memory.
sp_status sp_gif_writer_open(sp_gif_writer **out, char *message);
/// Starts a GIF89a stream written to `descriptor` (the caller's; never closed here) through a 64 KiB buffer,
/// so the output is never held whole. A failed write is SP_ERR_IO with the system's reason.
sp_status sp_gif_writer_open_descriptor(int descriptor, sp_gif_writer **out, char *message);
/// Writes the header, the logical screen descriptor and the global colour table (color_count 0: none;
/// otherwise a power of two 2...256). The aspect byte is written as given.
sp_status sp_gif_writer_put_screen(sp_gif_writer *writer, int width, int height, int color_resolution,
                                   int background_index, int aspect_byte, const uint8_t *colors, int color_count,
                                   int sorted, char *message);
/// Writes one extension: `label`, then `blocks`, a sub-block stream ([length][payload]...) without the
/// terminator, which the shim adds. The stream must parse exactly into sub-blocks.
sp_status sp_gif_writer_put_extension(sp_gif_writer *writer, int label, const uint8_t *blocks, size_t length,
                                      char *message);
/// Writes an image descriptor with an optional local colour table (color_count 0: use the global one;
/// otherwise a power of two 2...256) and starts its LZW data.
sp_status sp_gif_writer_put_image(sp_gif_writer *writer, int left, int top, int width, int height, int interlaced,
                                  const uint8_t *colors, int color_count, int sorted, char *message);
/// Compresses one row of palette indices (EGifPutLine), `length` = the image width. For an interlaced
/// image the caller passes rows in pass order. giflib masks the buffer's values in place.
sp_status sp_gif_writer_put_line(sp_gif_writer *writer, uint8_t *line, int length, char *message);
/// Writes the trailer and closes giflib; on success *out_length is the whole output's length and, in memory,
/// *out is malloc'ed (free with sp_free) and the writer no longer owns it; written to a descriptor, the rest
/// of the buffer is written out and *out is NULL. The writer must still be freed.
sp_status sp_gif_writer_finish(sp_gif_writer *writer, uint8_t **out, size_t *out_length, char *message);
/// Frees the writer (and its buffer, unless handed out by sp_gif_writer_finish).
void sp_gif_writer_free(sp_gif_writer *writer);

#endif
