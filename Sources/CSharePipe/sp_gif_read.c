// giflib's decoder (DGif*) behind status + message. giflib never longjmps: each call returns GIF_ERROR and
// leaves a code in GifFile->Error (or in an out-parameter while opening). Every failure is turned into a
// status and a message here: GifErrorString's text, the byte offset, and the real cause where giflib's code
// hides it (data that ran out is reported as truncation; an LZW minimum code size over 8 is named as such
// instead of giflib's "Failed to read from given file").
#include "sp_gif_private.h"

#include <stdlib.h>
#include <string.h>

struct sp_gif_reader {
    GifFileType *gif;
    FILE *file;               // file source, or NULL
    const uint8_t *data;      // memory source
    size_t length;
    size_t position;          // bytes handed to giflib so far
    int hit_end;              // a read came back short: the data ended
    int last_byte;            // the last byte handed to giflib (-1: none)
    int last_read_length;
    uint8_t global_colors[768];
    uint8_t local_colors[768];
};

static int read_input(GifFileType *gif, GifByteType *buffer, int wanted) {
    sp_gif_reader *reader = (sp_gif_reader *)gif->UserData;
    size_t got = 0;
    if (wanted <= 0) return 0;
    if (reader->file != NULL) {
        got = fread(buffer, 1, (size_t)wanted, reader->file);
    } else {
        size_t left = reader->length - reader->position;
        got = (size_t)wanted < left ? (size_t)wanted : left;
        memcpy(buffer, reader->data + reader->position, got);
    }
    reader->position += got;
    reader->last_read_length = (int)got;
    if (got > 0) reader->last_byte = buffer[got - 1];
    if (got < (size_t)wanted) reader->hit_end = 1;
    return (int)got;
}

// Builds the message for a failed reader call. `what` names the step ("reading an image descriptor").
static sp_status reader_failure(sp_gif_reader *reader, int code, const char *what, char *message) {
    char text[SP_MESSAGE_LENGTH];
    if (reader->hit_end) {
        snprintf(text, sizeof(text), "%s: data ends at byte %ld (file is truncated)", what, (long)reader->position);
    } else {
        snprintf(text, sizeof(text), "%s: %s at byte %ld", what, error_text(code), (long)reader->position);
    }
    copy_message(message, text);
    return SP_ERR_LIBRARY;
}

static void copy_colors(const ColorMapObject *map, uint8_t *target, int *count, int *sorted) {
    *count = 0;
    *sorted = 0;
    if (map == NULL || map->Colors == NULL) return;
    int n = map->ColorCount > 256 ? 256 : map->ColorCount;
    for (int i = 0; i < n; i++) {
        target[3 * i] = map->Colors[i].Red;
        target[3 * i + 1] = map->Colors[i].Green;
        target[3 * i + 2] = map->Colors[i].Blue;
    }
    *count = n;
    *sorted = map->SortFlag ? 1 : 0;
}

static sp_status reader_start(sp_gif_reader *reader, sp_gif_reader **out, sp_gif_screen *screen, char *message) {
    int error = 0;
    reader->last_byte = -1;
    reader->gif = DGifOpen(reader, read_input, &error);
    if (reader->gif == NULL) {
        sp_status status;
        if (error == D_GIF_ERR_NOT_GIF_FILE) {
            copy_message(message, "not a GIF file (no GIF signature)");
            status = SP_ERR_LIBRARY;
        } else if (error == D_GIF_ERR_NOT_ENOUGH_MEM) {
            copy_message(message, "out of memory reading the screen descriptor");
            status = SP_ERR_MEMORY;
        } else {
            status = reader_failure(reader, error, "reading the screen descriptor", message);
        }
        if (reader->file != NULL) fclose(reader->file);
        free(reader);
        return status;
    }
    GifFileType *gif = reader->gif;
    memset(screen, 0, sizeof(*screen));
    screen->width = gif->SWidth;
    screen->height = gif->SHeight;
    screen->color_resolution = gif->SColorResolution;
    screen->background_index = gif->SBackGroundColor;
    screen->aspect_byte = gif->AspectByte;
    copy_colors(gif->SColorMap, reader->global_colors, &screen->global_color_count, &screen->global_sorted);
    screen->global_colors = screen->global_color_count > 0 ? reader->global_colors : NULL;
    *out = reader;
    return SP_OK;
}

sp_status sp_gif_reader_open_file(const char *path, sp_gif_reader **out, sp_gif_screen *screen, char *message) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) { copy_message(message, "cannot open file for reading"); return SP_ERR_IO; }
    sp_gif_reader *reader = calloc(1, sizeof(sp_gif_reader));
    if (reader == NULL) { fclose(file); copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    reader->file = file;
    return reader_start(reader, out, screen, message);
}

sp_status sp_gif_reader_open_memory(const uint8_t *data, size_t length, sp_gif_reader **out, sp_gif_screen *screen,
                                    char *message) {
    if (data == NULL || length == 0) { copy_message(message, "empty input"); return SP_ERR_ARGUMENT; }
    sp_gif_reader *reader = calloc(1, sizeof(sp_gif_reader));
    if (reader == NULL) { copy_message(message, "out of memory"); return SP_ERR_MEMORY; }
    reader->data = data;
    reader->length = length;
    return reader_start(reader, out, screen, message);
}

sp_status sp_gif_reader_next_record(sp_gif_reader *reader, sp_gif_record *record, char *message) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    size_t before = reader->position;
    if (DGifGetRecordType(reader->gif, &type) == GIF_ERROR) {
        // Nothing at all left where a record should start: the stream ended between records. Many writers
        // omit the trailer; the caller decides whether that is acceptable.
        if (reader->hit_end && reader->position == before) {
            *record = SP_GIF_RECORD_END_OF_DATA;
            return SP_OK;
        }
        if (reader->gif->Error == D_GIF_ERR_WRONG_RECORD) {
            char text[SP_MESSAGE_LENGTH];
            snprintf(text, sizeof(text), "unknown block type 0x%02X at byte %ld (expected an image, extension or trailer)",
                     reader->last_byte & 0xFF, (long)before);
            copy_message(message, text);
            *record = SP_GIF_RECORD_UNKNOWN;
            return SP_OK;
        }
        return reader_failure(reader, reader->gif->Error, "reading a block type", message);
    }
    switch (type) {
    case IMAGE_DESC_RECORD_TYPE: *record = SP_GIF_RECORD_IMAGE; break;
    case EXTENSION_RECORD_TYPE: *record = SP_GIF_RECORD_EXTENSION; break;
    default: *record = SP_GIF_RECORD_TRAILER; break;
    }
    return SP_OK;
}

sp_status sp_gif_reader_extension_start(sp_gif_reader *reader, int *label, const uint8_t **block, int *length,
                                        char *message) {
    GifByteType *extension = NULL;
    *block = NULL;
    *length = 0;
    if (DGifGetExtension(reader->gif, label, &extension) == GIF_ERROR) {
        return reader_failure(reader, reader->gif->Error, "reading an extension", message);
    }
    if (extension != NULL) {
        *length = extension[0];
        *block = extension + 1;
    }
    return SP_OK;
}

sp_status sp_gif_reader_extension_next(sp_gif_reader *reader, const uint8_t **block, int *length, char *message) {
    GifByteType *extension = NULL;
    *block = NULL;
    *length = 0;
    if (DGifGetExtensionNext(reader->gif, &extension) == GIF_ERROR) {
        return reader_failure(reader, reader->gif->Error, "reading an extension", message);
    }
    if (extension == NULL) return SP_ERR_END;
    *length = extension[0];
    *block = extension + 1;
    return SP_OK;
}

sp_status sp_gif_reader_image(sp_gif_reader *reader, sp_gif_image *image, char *message) {
    GifFileType *gif = reader->gif;
    memset(image, 0, sizeof(*image));
    if (DGifGetImageDesc(gif) == GIF_ERROR) {
        // The LZW minimum code size is the last byte giflib reads here; it rejects sizes over 8 with a
        // read-failure code, which would otherwise be reported as an I/O problem.
        if (!reader->hit_end && reader->last_read_length == 1 && reader->last_byte > 8) {
            char text[SP_MESSAGE_LENGTH];
            snprintf(text, sizeof(text), "invalid LZW minimum code size %d at byte %ld (must be 2...8)",
                     reader->last_byte, (long)reader->position - 1);
            copy_message(message, text);
            return SP_ERR_LIBRARY;
        }
        if (gif->Error == D_GIF_ERR_NOT_ENOUGH_MEM) {
            copy_message(message, "out of memory reading an image descriptor");
            return SP_ERR_MEMORY;
        }
        return reader_failure(reader, gif->Error, "reading an image descriptor", message);
    }
    image->left = gif->Image.Left;
    image->top = gif->Image.Top;
    image->width = gif->Image.Width;
    image->height = gif->Image.Height;
    image->interlaced = gif->Image.Interlace ? 1 : 0;
    copy_colors(gif->Image.ColorMap, reader->local_colors, &image->local_color_count, &image->local_sorted);
    image->local_colors = image->local_color_count > 0 ? reader->local_colors : NULL;
    // DGifGetImageDesc appends a SavedImage (with a copy of the local colour table) for every frame, even in
    // the low-level API. Releasing it here keeps memory independent of the frame count.
    GifFreeSavedImages(gif);
    gif->SavedImages = NULL;
    gif->ImageCount = 0;
    return SP_OK;
}

sp_status sp_gif_reader_read_line(sp_gif_reader *reader, uint8_t *line, int length, char *message) {
    if (line == NULL || length <= 0) { copy_message(message, "row buffer is empty"); return SP_ERR_ARGUMENT; }
    if (DGifGetLine(reader->gif, line, length) == GIF_ERROR) {
        int code = reader->gif->Error;
        if (code == D_GIF_ERR_EOF_TOO_SOON) {
            char text[SP_MESSAGE_LENGTH];
            snprintf(text, sizeof(text), "image data ends before the last pixel (LZW end code too early) at byte %ld",
                     (long)reader->position);
            copy_message(message, text);
            return SP_ERR_LIBRARY;
        }
        return reader_failure(reader, code, "decoding image data", message);
    }
    return SP_OK;
}

sp_status sp_gif_reader_skip_image(sp_gif_reader *reader, char *message) {
    int code_size = 0;
    GifByteType *block = NULL;
    if (DGifGetCode(reader->gif, &code_size, &block) == GIF_ERROR) {
        return reader_failure(reader, reader->gif->Error, "skipping image data", message);
    }
    while (block != NULL) {
        if (DGifGetCodeNext(reader->gif, &block) == GIF_ERROR) {
            return reader_failure(reader, reader->gif->Error, "skipping image data", message);
        }
    }
    return SP_OK;
}

long sp_gif_reader_offset(const sp_gif_reader *reader) { return (long)reader->position; }

void sp_gif_reader_free(sp_gif_reader *reader) {
    if (reader == NULL) return;
    if (reader->gif != NULL) {
        int error = 0;
        DGifCloseFile(reader->gif, &error);
    }
    if (reader->file != NULL) fclose(reader->file);
    free(reader);
}
