// giflib's encoder (EGif*) behind status + message, writing into a growable memory buffer or, through a
// fixed buffer, into a file descriptor the caller owns. giflib never longjmps: each call returns GIF_ERROR
// and leaves a code in GifFile->Error; every failure is turned into a status and a message naming the step
// ("out of memory for the output" when the buffer could not grow, the system's reason when a write failed).
#include "sp_gif_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// The buffer in front of a file descriptor: the output goes out in pieces of this size.
#define SP_GIF_FILE_BUFFER (64 * 1024)

struct sp_gif_writer {
    GifFileType *gif;
    uint8_t *buffer;
    size_t capacity;
    size_t length;      // bytes in `buffer`
    int out_of_memory;
    int descriptor;     // -1: the whole output stays in `buffer`
    size_t flushed;     // bytes already written to `descriptor`
    int write_error;    // errno of the write that failed, 0 if none
};

// Writes `count` bytes to the descriptor, whole (through short writes and EINTR); 0 on failure.
static int write_all(sp_gif_writer *writer, const uint8_t *bytes, size_t count) {
    size_t done = 0;
    while (done < count) {
        ssize_t wrote = write(writer->descriptor, bytes + done, count - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) {
            writer->write_error = wrote < 0 ? errno : EIO;
            return 0;
        }
        done += (size_t)wrote;
    }
    writer->flushed += count;
    return 1;
}

static int flush_buffer(sp_gif_writer *writer) {
    if (!write_all(writer, writer->buffer, writer->length)) return 0;
    writer->length = 0;
    return 1;
}

static int write_output(GifFileType *gif, const GifByteType *bytes, int count) {
    sp_gif_writer *writer = (sp_gif_writer *)gif->UserData;
    if (count <= 0) return 0;
    if (writer->descriptor >= 0) {
        if (writer->length + (size_t)count > writer->capacity && !flush_buffer(writer)) return 0;
        if ((size_t)count > writer->capacity) return write_all(writer, bytes, (size_t)count) ? count : 0;
        memcpy(writer->buffer + writer->length, bytes, (size_t)count);
        writer->length += (size_t)count;
        return count;
    }
    if (writer->length + (size_t)count > writer->capacity) {
        size_t capacity = writer->capacity * 2;
        while (capacity < writer->length + (size_t)count) capacity *= 2;
        uint8_t *grown = realloc(writer->buffer, capacity);
        if (grown == NULL) { writer->out_of_memory = 1; return 0; }
        writer->buffer = grown;
        writer->capacity = capacity;
    }
    memcpy(writer->buffer + writer->length, bytes, (size_t)count);
    writer->length += (size_t)count;
    return count;
}

// Whether the output could not grow or be written (sticky: the writes after a failed one may succeed).
static int output_failed(const sp_gif_writer *writer) { return writer->out_of_memory || writer->write_error != 0; }

static sp_status writer_failure(sp_gif_writer *writer, const char *what, char *message) {
    char text[SP_MESSAGE_LENGTH];
    if (writer->out_of_memory) {
        snprintf(text, sizeof(text), "%s: out of memory for the output", what);
        copy_message(message, text);
        return SP_ERR_MEMORY;
    }
    if (writer->write_error != 0) {
        snprintf(text, sizeof(text), "%s: cannot write the output: %s", what, strerror(writer->write_error));
        copy_message(message, text);
        return SP_ERR_IO;
    }
    int code = writer->gif != NULL ? writer->gif->Error : 0;
    snprintf(text, sizeof(text), "%s: %s", what, error_text(code));
    copy_message(message, text);
    return SP_ERR_LIBRARY;
}

static int valid_table_size(int count) {
    return count >= 2 && count <= 256 && (count & (count - 1)) == 0;
}

// giflib's colour map object for RGB triples; NULL for count 0 or on allocation failure.
static ColorMapObject *make_map(const uint8_t *colors, int count, int sorted) {
    ColorMapObject *map = GifMakeMapObject(count, NULL);
    if (map == NULL) return NULL;
    for (int i = 0; i < count; i++) {
        map->Colors[i].Red = colors[3 * i];
        map->Colors[i].Green = colors[3 * i + 1];
        map->Colors[i].Blue = colors[3 * i + 2];
    }
    map->SortFlag = sorted ? true : false;
    return map;
}

static sp_status open_writer(int descriptor, sp_gif_writer **out, char *message) {
    sp_gif_writer *writer = calloc(1, sizeof(sp_gif_writer));
    if (writer == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    writer->descriptor = descriptor;
    writer->capacity = SP_GIF_FILE_BUFFER;
    writer->buffer = malloc(writer->capacity);
    if (writer->buffer == NULL) { free(writer); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    int error = 0;
    writer->gif = EGifOpen(writer, write_output, &error);
    if (writer->gif == NULL) {
        free(writer->buffer);
        free(writer);
        copy_message(message, error_text(error));
        return SP_ERR_MEMORY;
    }
    // The low-level API decides between GIF87a and GIF89a from saved extensions it never sees here.
    EGifSetGifVersion(writer->gif, true);
    *out = writer;
    return SP_OK;
}

sp_status sp_gif_writer_open(sp_gif_writer **out, char *message) { return open_writer(-1, out, message); }

sp_status sp_gif_writer_open_descriptor(int descriptor, sp_gif_writer **out, char *message) {
    if (descriptor < 0) { copy_message(message, "no file to write the GIF to"); return SP_ERR_ARGUMENT; }
    return open_writer(descriptor, out, message);
}

sp_status sp_gif_writer_put_screen(sp_gif_writer *writer, int width, int height, int color_resolution,
                                   int background_index, int aspect_byte, const uint8_t *colors, int color_count,
                                   int sorted, char *message) {
    if (width < 1 || height < 1 || width > 65535 || height > 65535) {
        copy_message(message, "screen size must be 1...65535 pixels each way");
        return SP_ERR_ARGUMENT;
    }
    if (color_count != 0 && (!valid_table_size(color_count) || colors == NULL)) {
        copy_message(message, "a global colour table must have 2, 4, ... or 256 entries");
        return SP_ERR_ARGUMENT;
    }
    if (color_resolution < 1 || color_resolution > 8) color_resolution = 8;
    ColorMapObject *map = NULL;
    if (color_count > 0) {
        map = make_map(colors, color_count, sorted);
        if (map == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    }
    writer->gif->AspectByte = (GifByteType)aspect_byte;
    int result = EGifPutScreenDesc(writer->gif, width, height, color_resolution, background_index & 0xFF, map);
    GifFreeMapObject(map);
    if (result == GIF_ERROR || output_failed(writer)) return writer_failure(writer, "writing the screen descriptor", message);
    // Older giflib writes 0 for the pixel aspect ratio; it is byte 12 ("GIF89a", 2+2 size, flags, background),
    // still in the buffer (a file writer's buffer goes out only once it is full).
    if (writer->flushed == 0 && writer->length >= 13) writer->buffer[12] = (uint8_t)aspect_byte;
    return SP_OK;
}

sp_status sp_gif_writer_put_extension(sp_gif_writer *writer, int label, const uint8_t *blocks, size_t length,
                                      char *message) {
    // Check the sub-block stream parses exactly before anything is written.
    size_t position = 0;
    while (position < length) {
        size_t block = blocks[position];
        if (block == 0 || position + 1 + block > length) {
            copy_message(message, "extension data is not a whole sequence of sub-blocks");
            return SP_ERR_ARGUMENT;
        }
        position += 1 + block;
    }
    if (EGifPutExtensionLeader(writer->gif, label & 0xFF) == GIF_ERROR) {
        return writer_failure(writer, "writing an extension", message);
    }
    position = 0;
    while (position < length) {
        int block = blocks[position];
        if (EGifPutExtensionBlock(writer->gif, block, blocks + position + 1) == GIF_ERROR) {
            return writer_failure(writer, "writing an extension", message);
        }
        position += 1 + (size_t)block;
    }
    if (EGifPutExtensionTrailer(writer->gif) == GIF_ERROR || output_failed(writer)) {
        return writer_failure(writer, "writing an extension", message);
    }
    return SP_OK;
}

sp_status sp_gif_writer_put_image(sp_gif_writer *writer, int left, int top, int width, int height, int interlaced,
                                  const uint8_t *colors, int color_count, int sorted, char *message) {
    if (width < 1 || height < 1 || left < 0 || top < 0 || left + width > 65535 || top + height > 65535) {
        copy_message(message, "frame rectangle out of range");
        return SP_ERR_ARGUMENT;
    }
    if (color_count != 0 && (!valid_table_size(color_count) || colors == NULL)) {
        copy_message(message, "a local colour table must have 2, 4, ... or 256 entries");
        return SP_ERR_ARGUMENT;
    }
    GifFileType *gif = writer->gif;
    ColorMapObject *map = NULL;
    if (color_count > 0) {
        map = make_map(colors, color_count, sorted);
        if (map == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    } else if (gif->Image.ColorMap != NULL) {
        // giflib forgets (and leaks) the previous frame's local table when the next frame has none.
        GifFreeMapObject(gif->Image.ColorMap);
        gif->Image.ColorMap = NULL;
    }
    int result = EGifPutImageDesc(gif, left, top, width, height, interlaced ? true : false, map);
    GifFreeMapObject(map);
    if (result == GIF_ERROR || output_failed(writer)) return writer_failure(writer, "writing an image descriptor", message);
    return SP_OK;
}

sp_status sp_gif_writer_put_line(sp_gif_writer *writer, uint8_t *line, int length, char *message) {
    if (line == NULL || length <= 0) { copy_message(message, "row buffer is empty"); return SP_ERR_ARGUMENT; }
    if (EGifPutLine(writer->gif, line, length) == GIF_ERROR || output_failed(writer)) {
        return writer_failure(writer, "compressing image data", message);
    }
    return SP_OK;
}


sp_status sp_gif_writer_finish(sp_gif_writer *writer, uint8_t **out, size_t *out_length, char *message) {
    int error = 0;
    int result = EGifCloseFile(writer->gif, &error);  // writes the trailer and frees giflib's state
    writer->gif = NULL;
    if (result != GIF_ERROR && writer->descriptor >= 0) flush_buffer(writer);
    if (result == GIF_ERROR || output_failed(writer)) {
        char text[SP_MESSAGE_LENGTH];
        snprintf(text, sizeof(text), "finishing the GIF: %s",
                 writer->out_of_memory ? "out of memory"
                 : writer->write_error != 0 ? strerror(writer->write_error)
                 : error_text(error));
        copy_message(message, text);
        return writer->out_of_memory ? SP_ERR_MEMORY : writer->write_error != 0 ? SP_ERR_IO : SP_ERR_LIBRARY;
    }
    if (writer->descriptor >= 0) {
        *out = NULL;
        *out_length = writer->flushed;
        return SP_OK;
    }
    *out = writer->buffer;
    *out_length = writer->length;
    writer->buffer = NULL;
    return SP_OK;
}

void sp_gif_writer_free(sp_gif_writer *writer) {
    if (writer == NULL) return;
    if (writer->gif != NULL) {
        int error = 0;
        EGifCloseFile(writer->gif, &error);
    }
    free(writer->buffer);
    free(writer);
}
