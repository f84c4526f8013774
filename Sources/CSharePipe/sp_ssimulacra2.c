// SSIMULACRA2, streamed a row at a time through six scales (the description: sp_ssimulacra2.h). Each scale
// turns an incoming linear-RGB row of both pictures into positive XYB, blurs 4 planes of each channel it scores
// (both pictures, the sum of their squares and their product: the SSIM map needs sigma11 and sigma22 only as
// their sum) horizontally into a ring of 12 rows, and once the ring holds the 5 rows below the second of a pair
// of rows it blurs both vertically (each row of the ring read once for the two: the vertical blur waited on the
// cache) and pools their SSIM and edge maps into sums. Pairs of incoming rows, averaged, are the next scale's
// rows. Nothing here can fail once the scorer is allocated.
//
// A channel is scored at a scale only where one of its six features weighs at least WEIGHT_FLOOR: the others
// (X and B at full size, B at the next two scales, the whole smallest scale) weigh under 0.002 each, move the
// score by well under 0.01, and would cost two thirds of the work at full size. The row kernels
// (sp_ssimulacra2_kernels.c) run 8 samples at a time where cpuid reports AVX2, else 4 (SSE2, every x86-64),
// else plain C, which also finishes each row.
#include "sp_ssimulacra2_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCALES 6
// Rows are blurred vertically and pooled two at a time (`pool_rows`): the ring of horizontally blurred rows holds
// the TAPS + 1 rows a pair reads.
#define RING (TAPS + 1)
// The XYB rows a scale keeps: a pair's own samples are pooled once the RADIUS rows below its second are in.
#define XYB_ROWS (RADIUS + 2)
#define MIN_SIDE 8
#define MAPS 4 // per scored channel: mu1, mu2, x1² + x2², x1 x2 (before the vertical blur)
// A channel's features at a scale all weighing less than this: the channel is not computed there.
#define WEIGHT_FLOOR 0.01


// The published weights of the 108 features, in the order the score walks them: channel (X, Y, B), scale,
// norm (1, 4), then for each the SSIM map, the artefact map and the detail-lost map.
static const double feature_weights[108] = {
    0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
    1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
    1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
    1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
    0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
    0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
    0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
    225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
    176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0, 0.0,
    34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0008680556573291698, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437, 0.0, 0.0, 8.826982764996862,
    23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493,
    171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0, 0.0005130064588990679, 0.0, 0.00010854057858411537,
};


// MARK: - The scorer

typedef struct {
    int width, height;
    int rows_in;     // rows received
    int rows_done;   // rows pooled
    int scored[3];   // the channels this scale scores (X, Y, B), in order
    int scored_count;
    int all_xyb;     // whether X or B is scored (else only Y is converted)
    float *xyb;      // XYB_ROWS rows of the scored channels' planes (the reference's, then the distorted's)
    float *spare;    // where X and B go that are converted but not scored (6 planes; only with all_xyb)
    float *blurred;  // RING rows of MAPS planes per scored channel, blurred horizontally
    float *padded;   // one plane with RADIUS zero samples each side
    float *column;   // MAPS planes per scored channel, twice: a pair of rows blurred both ways
    float *pending;  // the next scale's row being averaged (6 planes of its width)
    // Per channel: SSIM map sum and sum of 4th powers, artefact map the same, detail-lost map the same.
    double sums[3][6];
} scale_state;

struct sp_ssimulacra2 {
    int scale_count;
    scale_state scales[SCALES];
    sp_ssimulacra2_kernels kernels; // the widest the CPU runs (the rows' tails: sp_ssimulacra2_plain)
    float to_linear[256];
    float kernel[RADIUS + 1]; // the Gaussian's weights from the centre out
    float cube_root_bias;
    float *row; // the incoming row as linear RGB (6 planes)
};

static int scale_count_for(int width, int height) {
    int count = 0;
    while (count < SCALES && width >= MIN_SIDE && height >= MIN_SIDE) {
        count++;
        width = (width + 1) / 2;
        height = (height + 1) / 2;
    }
    return count;
}

// Whether channel `c` is scored at scale `s` of a scorer with `scale_count` scales: the weights the score walks
// for it (channel, then scale, as `sp_ssimulacra2_score` walks them) reach WEIGHT_FLOOR.
static int channel_scored(int scale_count, int s, int c) {
    const double *weights = feature_weights + (size_t)(c * scale_count + s) * 6;
    for (int k = 0; k < 6; k++) {
        if (weights[k] >= WEIGHT_FLOOR) return 1;
    }
    return 0;
}

static int scored_count_at(int scale_count, int s) {
    return channel_scored(scale_count, s, 0) + channel_scored(scale_count, s, 1) + channel_scored(scale_count, s, 2);
}

// Whether a scale converts X and B (it scores one of them), else only Y.
static int all_xyb_at(int scale_count, int s) {
    return channel_scored(scale_count, s, 0) || channel_scored(scale_count, s, 2);
}

// Floats a scale of `width` holds, its next scale's pending row (`next_width`, 0 for none) included.
static size_t scale_floats(int width, int next_width, int scored, int all_xyb) {
    return (size_t)XYB_ROWS * 2 * scored * width + (size_t)(all_xyb ? 6 * width : 0) +
           (size_t)RING * MAPS * scored * width + (size_t)(width + 2 * RADIUS) + (size_t)2 * MAPS * scored * width +
           (size_t)6 * next_width;
}

size_t sp_ssimulacra2_bytes(int width, int height) {
    if (width <= 0 || height <= 0) return sizeof(sp_ssimulacra2);
    size_t floats = (size_t)6 * width;
    int count = scale_count_for(width, height);
    for (int s = 0, w = width; s < count; s++, w = (w + 1) / 2) {
        floats += scale_floats(w, s + 1 < count ? (w + 1) / 2 : 0, scored_count_at(count, s), all_xyb_at(count, s));
    }
    return sizeof(sp_ssimulacra2) + floats * sizeof(float);
}

sp_status sp_ssimulacra2_new(int width, int height, sp_ssimulacra2 **scorer, char *message) {
    *scorer = NULL;
    if (width <= 0 || height <= 0) {
        sp_copy_message(message, "SSIMULACRA2 needs a picture of at least one pixel");
        return SP_ERR_ARGUMENT;
    }
    size_t bytes = sp_ssimulacra2_bytes(width, height);
    sp_ssimulacra2 *self = calloc(1, bytes);
    if (self == NULL) {
        sp_copy_message(message, "out of memory for the SSIMULACRA2 scorer");
        return SP_ERR_MEMORY;
    }
    self->kernels = sp_ssimulacra2_chosen_kernels();
    float *next = (float *)(self + 1);
    self->row = next;
    next += (size_t)6 * width;
    self->scale_count = scale_count_for(width, height);
    for (int s = 0, w = width, h = height; s < self->scale_count; s++, w = (w + 1) / 2, h = (h + 1) / 2) {
        scale_state *scale = &self->scales[s];
        scale->width = w;
        scale->height = h;
        for (int c = 0; c < 3; c++) {
            if (channel_scored(self->scale_count, s, c)) scale->scored[scale->scored_count++] = c;
        }
        scale->all_xyb = all_xyb_at(self->scale_count, s);
        scale->xyb = next;
        next += (size_t)XYB_ROWS * 2 * scale->scored_count * w;
        scale->spare = next;
        if (scale->all_xyb) next += (size_t)6 * w;
        scale->blurred = next;
        next += (size_t)RING * MAPS * scale->scored_count * w;
        scale->padded = next;
        next += (size_t)(w + 2 * RADIUS);
        scale->column = next;
        next += (size_t)2 * MAPS * scale->scored_count * w;
        scale->pending = next;
        if (s + 1 < self->scale_count) next += (size_t)6 * ((w + 1) / 2);
    }
    for (int v = 0; v < 256; v++) {
        double c = v / 255.0;
        self->to_linear[v] = (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
    }
    // scipy's gaussian_filter1d weights for sigma 1.5 truncated at radius 5, normalized.
    double total = 0, weights[TAPS];
    for (int k = -RADIUS; k <= RADIUS; k++) total += weights[k + RADIUS] = exp(-0.5 * k * k / (1.5 * 1.5));
    for (int k = 0; k <= RADIUS; k++) self->kernel[k] = (float)(weights[k + RADIUS] / total);
    self->cube_root_bias = cbrtf(SP_SSIM_OPSIN_BIAS);
    *scorer = self;
    return SP_OK;
}

void sp_ssimulacra2_free(sp_ssimulacra2 *scorer) { free(scorer); }

// Linear RGB planes to XYB (only Y unless `all`; then x_out and b_out may be NULL).
static void to_xyb(const sp_ssimulacra2 *self, const float *r, const float *g, const float *b, float *x_out,
                   float *y_out, float *b_out, int width, int all) {
    int done = self->kernels.to_xyb(r, g, b, x_out, y_out, b_out, width, all, self->cube_root_bias);
    sp_ssimulacra2_plain.to_xyb(r + done, g + done, b + done, all ? x_out + done : NULL, y_out + done,
                                all ? b_out + done : NULL, width - done, all, self->cube_root_bias);
}

// What `blur_row` blurs of a channel's two rows: either row, the sum of their squares (the variances need only
// sigma11 + sigma22) or their product.
enum { BLUR_FIRST, BLUR_SECOND, BLUR_SQUARES, BLUR_PRODUCT };

// One map of a channel's rows `a` (reference) and `b` (distorted) blurred horizontally, zero past both ends.
static void blur_row(const sp_ssimulacra2 *self, scale_state *scale, const float *restrict a,
                     const float *restrict b, int map, float *out) {
    const int width = scale->width;
    float *restrict middle = scale->padded + RADIUS;
    switch (map) {
    case BLUR_FIRST: memcpy(middle, a, sizeof(float) * (size_t)width); break;
    case BLUR_SECOND: memcpy(middle, b, sizeof(float) * (size_t)width); break;
    case BLUR_SQUARES:
        for (int i = 0; i < width; i++) middle[i] = a[i] * a[i] + b[i] * b[i];
        break;
    default:
        for (int i = 0; i < width; i++) middle[i] = a[i] * b[i];
    }
    for (int k = 0; k < RADIUS; k++) middle[-1 - k] = middle[width + k] = 0;
    int done = self->kernels.blur_horizontal(middle, out, width, self->kernel);
    sp_ssimulacra2_plain.blur_horizontal(middle + done, out + done, width - done, self->kernel);
}

// Row `y` blurred vertically (mirrored at the top and bottom: "d c b a | a b c d") and pooled into the
// scale's sums.
static void pool_row(const sp_ssimulacra2 *self, scale_state *scale, int y, const float *column) {
    const int width = scale->width;
    const size_t scored_planes = (size_t)scale->scored_count * width;
    const float *xyb = scale->xyb + (size_t)(y % XYB_ROWS) * 2 * scored_planes;
    for (int k = 0; k < scale->scored_count; k++) {
        const int c = scale->scored[k];
        const float *mu1 = column + (size_t)(MAPS * k) * width, *mu2 = mu1 + width;
        const float *squares = mu2 + width, *s12 = squares + width;
        const float *x1 = xyb + (size_t)k * width, *x2 = x1 + scored_planes;
        // A row's sums in float (at most some thousands of terms under 1, mostly far under), then in double.
        float row_sums[6] = {0, 0, 0, 0, 0, 0};
        int done = self->kernels.pool(mu1, mu2, squares, s12, x1, x2, width, row_sums);
        sp_ssimulacra2_plain.pool(mu1 + done, mu2 + done, squares + done, s12 + done, x1 + done, x2 + done,
                                  width - done, row_sums);
        for (int m = 0; m < 6; m++) scale->sums[c][m] += row_sums[m];
    }
}

// Rows `y` and, when `count` is 2, `y + 1` blurred vertically (mirrored at the top and bottom: "d c b a | a b c d")
// and pooled in order into the scale's sums: the same floats as one row at a time.
static void pool_rows(const sp_ssimulacra2 *self, scale_state *scale, int y, int count) {
    const size_t plane_row = (size_t)MAPS * scale->scored_count * scale->width;
    float *second = scale->column + plane_row;
    if (plane_row > 0) {
        // The rows around y, then the one more below that y + 1 reads (mirrored sources stay mirrored: row
        // y + 1's window is y's moved down by one).
        const float *rows[RING];
        for (int k = 0; k < TAPS + count - 1; k++) {
            int source = y - RADIUS + k;
            if (source < 0) source = -source - 1;
            if (source >= scale->height) source = 2 * scale->height - 1 - source;
            rows[k] = scale->blurred + (size_t)(source % RING) * plane_row;
        }
        const float *rest[RING];
        if (count == 2) {
            size_t done = self->kernels.blur_vertical_pair(rows, scale->column, second, plane_row, self->kernel);
            for (int k = 0; k < RING; k++) rest[k] = rows[k] + done;
            sp_ssimulacra2_plain.blur_vertical_pair(rest, scale->column + done, second + done, plane_row - done,
                                                    self->kernel);
        } else {
            size_t done = self->kernels.blur_vertical(rows, scale->column, plane_row, self->kernel);
            for (int k = 0; k < TAPS; k++) rest[k] = rows[k] + done;
            sp_ssimulacra2_plain.blur_vertical(rest, scale->column + done, plane_row - done, self->kernel);
        }
    }
    pool_row(self, scale, y, scale->column);
    if (count == 2) pool_row(self, scale, y + 1, second);
    scale->rows_done = y + count;
}

// Averages pairs of samples of each of the 6 planes of `row` (width `width`) into `out` (a lone last sample
// stays as it is); `accumulate`: the average of that and what `out` holds.
static void halve_row(const sp_ssimulacra2 *self, const float *row, int width, float *out, int accumulate) {
    const int half = (width + 1) / 2, pairs = width / 2;
    for (int p = 0; p < 6; p++) {
        const float *restrict in = row + (size_t)p * width;
        float *restrict o = out + (size_t)p * half;
        const int done = self->kernels.halve_pairs(in, o, pairs, accumulate);
        sp_ssimulacra2_plain.halve_pairs(in + 2 * done, o + done, pairs - done, accumulate);
        if (pairs < half) o[pairs] = accumulate ? 0.5f * (o[pairs] + in[2 * pairs]) : in[2 * pairs];
    }
}

// Takes the next linear row (6 planes) of scale `s`.
static void push_linear(sp_ssimulacra2 *self, int s, const float *row) {
    scale_state *scale = &self->scales[s];
    const int width = scale->width, y = scale->rows_in;
    if (y >= scale->height) return;
    if (scale->scored_count > 0) {
        const size_t scored_planes = (size_t)scale->scored_count * width;
        float *xyb = scale->xyb + (size_t)(y % XYB_ROWS) * 2 * scored_planes;
        for (int p = 0; p < 2; p++) {
            const float *linear = row + (size_t)(3 * p) * width;
            // Each channel's plane: the ring's where it is scored, else a spare one (Y is scored at every scale
            // that converts anything, so without all_xyb X and B are never written).
            float *planes[3];
            for (int c = 0, k = 0; c < 3; c++) {
                if (k < scale->scored_count && scale->scored[k] == c) {
                    planes[c] = xyb + p * scored_planes + (size_t)k++ * width;
                } else {
                    planes[c] = scale->all_xyb ? scale->spare + (size_t)(3 * p + c) * width : NULL;
                }
            }
            to_xyb(self, linear, linear + width, linear + 2 * (size_t)width, planes[0], planes[1], planes[2],
                   width, scale->all_xyb);
        }
        float *blurred = scale->blurred + (size_t)(y % RING) * MAPS * scale->scored_count * width;
        for (int k = 0; k < scale->scored_count; k++) {
            const float *x1 = xyb + (size_t)k * width, *x2 = x1 + scored_planes;
            float *out = blurred + (size_t)(MAPS * k) * width;
            blur_row(self, scale, x1, x2, BLUR_FIRST, out);
            blur_row(self, scale, x1, x2, BLUR_SECOND, out + width);
            blur_row(self, scale, x1, x2, BLUR_SQUARES, out + 2 * (size_t)width);
            blur_row(self, scale, x1, x2, BLUR_PRODUCT, out + 3 * (size_t)width);
        }
    }
    scale->rows_in = y + 1;
    // A pair is pooled once the RADIUS rows below its second are in.
    if (y - RADIUS >= scale->rows_done + 1) pool_rows(self, scale, scale->rows_done, 2);
    if (s + 1 < self->scale_count) {
        halve_row(self, row, width, scale->pending, y % 2);
        if (y % 2 == 1) push_linear(self, s + 1, scale->pending);
    }
}

void sp_ssimulacra2_push_rows(sp_ssimulacra2 *self, const uint8_t *reference, const uint8_t *distorted,
                              int channels, size_t stride, int count) {
    if (self->scale_count == 0) return;
    const int width = self->scales[0].width;
    for (int r = 0; r < count; r++) {
        const uint8_t *pictures[2] = {reference + (size_t)r * stride, distorted + (size_t)r * stride};
        for (int p = 0; p < 2; p++) {
            float *red = self->row + (size_t)(3 * p) * width, *green = red + width, *blue = green + width;
            const uint8_t *in = pictures[p];
            if (channels == 3) {
                const int done = self->kernels.rgb_to_linear(in, self->to_linear, red, green, blue, width);
                sp_ssimulacra2_plain.rgb_to_linear(in + (size_t)done * 3, self->to_linear, red + done, green + done,
                                               blue + done, width - done);
            } else if (channels == 4) {
                for (int i = 0; i < width; i++) {
                    const uint8_t *pixel = in + (size_t)i * channels;
                    red[i] = self->to_linear[pixel[0]];
                    green[i] = self->to_linear[pixel[1]];
                    blue[i] = self->to_linear[pixel[2]];
                }
            } else {
                for (int i = 0; i < width; i++) red[i] = green[i] = blue[i] = self->to_linear[in[(size_t)i * channels]];
            }
        }
        push_linear(self, 0, self->row);
    }
}

// Pools the rows a scale has left and hands a lone last row to the next scale, then finishes that one.
static void finish_scale(sp_ssimulacra2 *self, int s) {
    scale_state *scale = &self->scales[s];
    while (scale->rows_done < scale->height) {
        pool_rows(self, scale, scale->rows_done, scale->height - scale->rows_done >= 2 ? 2 : 1);
    }
    if (s + 1 < self->scale_count) {
        if (scale->height % 2 == 1) push_linear(self, s + 1, scale->pending);
        finish_scale(self, s + 1);
    }
}

double sp_ssimulacra2_score(sp_ssimulacra2 *self) {
    if (self->scale_count == 0) return 100.0;
    // Rows never fed are black in both pictures.
    while (self->scales[0].rows_in < self->scales[0].height) {
        memset(self->row, 0, sizeof(float) * 6 * (size_t)self->scales[0].width);
        push_linear(self, 0, self->row);
    }
    finish_scale(self, 0);
    double total = 0;
    int weight = 0;
    for (int c = 0; c < 3; c++) {
        for (int s = 0; s < self->scale_count; s++) {
            const scale_state *scale = &self->scales[s];
            const double pixels = (double)scale->width * (double)scale->height;
            const double *sums = scale->sums[c]; // zero where the channel is not scored here
            for (int norm = 0; norm < 2; norm++) {
                for (int map = 0; map < 3; map++) {
                    double mean = sums[2 * map + norm] / pixels;
                    double value = norm == 0 ? mean : sqrt(sqrt(mean));
                    total += feature_weights[weight++] * fabs(value);
                }
            }
        }
    }
    total *= 0.9562382616834844;
    total = 2.326765642916932 * total - 0.020884521182843837 * total * total +
            6.248496625763138e-05 * total * total * total;
    return total > 0 ? 100.0 - 10.0 * pow(total, 0.6276336467831387) : 100.0;
}

sp_status sp_ssimulacra2_compare(const uint8_t *reference, const uint8_t *distorted, int width, int height,
                                 int channels, size_t stride, double *score, char *message) {
    if (reference == NULL || distorted == NULL || channels < 1 || channels > 4 || stride < (size_t)width * channels) {
        sp_copy_message(message, "SSIMULACRA2 needs two pictures of 1 to 4 samples a pixel");
        return SP_ERR_ARGUMENT;
    }
    sp_ssimulacra2 *scorer;
    sp_status status = sp_ssimulacra2_new(width, height, &scorer, message);
    if (status != SP_OK) return status;
    sp_ssimulacra2_push_rows(scorer, reference, distorted, channels, stride, height);
    *score = sp_ssimulacra2_score(scorer);
    sp_ssimulacra2_free(scorer);
    return SP_OK;
}
