// SSIMULACRA2, streamed a row at a time through six scales (the description: sp_ssimulacra2.h). Each scale
// turns an incoming linear-RGB row of both pictures into positive XYB, blurs its 15 planes horizontally (per
// channel: both pictures, their squares and their product) into a ring of 11 rows, and once the ring holds the
// 5 rows below a row it blurs that row vertically and pools its SSIM and edge maps into sums. Pairs of incoming
// rows, averaged, are the next scale's rows. Nothing here can fail once the scorer is allocated. On x86-64 the
// XYB conversion and the pooling run four pixels at a time (SSE2, which every x86-64 has); elsewhere plain C:
// the same arithmetic, the sums added in another order.
#include "sp_ssimulacra2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SCALES 6
#define RADIUS 5
#define TAPS (2 * RADIUS + 1)
#define PLANES 15  // per colour channel: mu1, mu2, sigma11, sigma22, sigma12 (before the vertical blur)
#define MIN_SIDE 8

// The opsin absorbance matrix and bias of XYB (libjxl's opsin parameters).
static const float opsin[3][3] = {
    {0.30f, 0.622f, 0.078f},
    {0.23f, 0.692f, 0.078f},
    {0.24342268924547819f, 0.20476744424496821f, 0.55180986650955360f},
};
static const float opsin_bias = 0.0037930732552754493f;

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

typedef struct {
    int width, height;
    int rows_in;    // rows received
    int rows_done;  // rows pooled
    float *xyb;     // TAPS rows of 6 planes (reference X, Y, B, distorted X, Y, B), `width` each
    float *blurred; // TAPS rows of PLANES planes, blurred horizontally
    float *padded;  // one plane with RADIUS mirrored samples each side
    float *column;  // PLANES planes: one row blurred both ways
    float *pending; // the next scale's row being averaged (6 planes of its width)
    // Per channel: SSIM map sum and sum of 4th powers, artefact map the same, detail-lost map the same.
    double sums[3][6];
} scale_state;

struct sp_ssimulacra2 {
    int scale_count;
    scale_state scales[SCALES];
    float to_linear[256];
    float kernel[TAPS];
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

// Floats a scale of `width` holds, its next scale's pending row (`next_width`, 0 for none) included.
static size_t scale_floats(int width, int next_width) {
    return (size_t)TAPS * 6 * width + (size_t)TAPS * PLANES * width + (size_t)(width + 2 * RADIUS) +
           (size_t)PLANES * width + (size_t)6 * next_width;
}

size_t sp_ssimulacra2_bytes(int width, int height) {
    if (width <= 0 || height <= 0) return sizeof(sp_ssimulacra2);
    size_t floats = (size_t)6 * width;
    int count = scale_count_for(width, height);
    for (int s = 0, w = width; s < count; s++, w = (w + 1) / 2) {
        floats += scale_floats(w, s + 1 < count ? (w + 1) / 2 : 0);
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
    float *next = (float *)(self + 1);
    self->row = next;
    next += (size_t)6 * width;
    self->scale_count = scale_count_for(width, height);
    for (int s = 0, w = width, h = height; s < self->scale_count; s++, w = (w + 1) / 2, h = (h + 1) / 2) {
        scale_state *scale = &self->scales[s];
        scale->width = w;
        scale->height = h;
        scale->xyb = next;
        next += (size_t)TAPS * 6 * w;
        scale->blurred = next;
        next += (size_t)TAPS * PLANES * w;
        scale->padded = next;
        next += (size_t)(w + 2 * RADIUS);
        scale->column = next;
        next += (size_t)PLANES * w;
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
    for (int k = 0; k < TAPS; k++) self->kernel[k] = (float)(weights[k] / total);
    self->cube_root_bias = cbrtf(opsin_bias);
    *scorer = self;
    return SP_OK;
}

void sp_ssimulacra2_free(sp_ssimulacra2 *scorer) { free(scorer); }

// A cube root for the positive values XYB meets (at least the opsin bias): a bit-level first guess refined by
// three Newton steps, within a float's rounding of cbrtf and several times faster.
static inline float cube_root(float value) {
    union {
        float f;
        uint32_t u;
    } bits = {value};
    bits.u = bits.u / 3 + 709921077u;
    float x = bits.f;
    for (int step = 0; step < 3; step++) x = (2.0f * x + value / (x * x)) * (1.0f / 3.0f);
    return x;
}

#if defined(__SSE2__)
// `cube_root` four at a time: the first guess from the bits through float arithmetic (exact enough for a guess).
static inline __m128 cube_root4(__m128 value) {
    const __m128i bits = _mm_castps_si128(value);
    const __m128 third = _mm_set1_ps(1.0f / 3.0f);
    __m128i guess = _mm_cvttps_epi32(_mm_mul_ps(_mm_cvtepi32_ps(bits), third));
    __m128 x = _mm_castsi128_ps(_mm_add_epi32(guess, _mm_set1_epi32(709921077)));
    const __m128 two = _mm_set1_ps(2.0f);
    for (int step = 0; step < 3; step++) {
        x = _mm_mul_ps(_mm_add_ps(_mm_mul_ps(two, x), _mm_div_ps(value, _mm_mul_ps(x, x))), third);
    }
    return x;
}
#endif

// Linear RGB planes to the positive XYB planes of the metric.
static void to_xyb(const sp_ssimulacra2 *self, const float *r, const float *g, const float *b, float *x_out,
                   float *y_out, float *b_out, int width) {
    const float bias = self->cube_root_bias;
    int i = 0;
#if defined(__SSE2__)
    const __m128 tiny = _mm_set1_ps(1e-20f), v_bias = _mm_set1_ps(bias), absorbance = _mm_set1_ps(opsin_bias);
    const __m128 half = _mm_set1_ps(0.5f);
    for (; i + 4 <= width; i += 4) {
        const __m128 red = _mm_loadu_ps(r + i), green = _mm_loadu_ps(g + i), blue = _mm_loadu_ps(b + i);
        __m128 mixed[3];
        for (int c = 0; c < 3; c++) {
            __m128 m = _mm_add_ps(
                _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_set1_ps(opsin[c][0]), red), _mm_mul_ps(_mm_set1_ps(opsin[c][1]), green)),
                           _mm_mul_ps(_mm_set1_ps(opsin[c][2]), blue)),
                absorbance);
            mixed[c] = _mm_sub_ps(cube_root4(_mm_max_ps(m, tiny)), v_bias);
        }
        const __m128 x = _mm_mul_ps(half, _mm_sub_ps(mixed[0], mixed[1]));
        const __m128 y = _mm_mul_ps(half, _mm_add_ps(mixed[0], mixed[1]));
        _mm_storeu_ps(x_out + i, _mm_add_ps(_mm_mul_ps(x, _mm_set1_ps(14.0f)), _mm_set1_ps(0.42f)));
        _mm_storeu_ps(y_out + i, _mm_add_ps(y, _mm_set1_ps(0.01f)));
        _mm_storeu_ps(b_out + i, _mm_add_ps(_mm_sub_ps(mixed[2], y), _mm_set1_ps(0.55f)));
    }
#endif
    for (; i < width; i++) {
        float mixed[3];
        for (int c = 0; c < 3; c++) {
            float m = opsin[c][0] * r[i] + opsin[c][1] * g[i] + opsin[c][2] * b[i] + opsin_bias;
            mixed[c] = cube_root(m > 1e-20f ? m : 1e-20f) - bias;
        }
        float x = 0.5f * (mixed[0] - mixed[1]), y = 0.5f * (mixed[0] + mixed[1]);
        x_out[i] = x * 14.0f + 0.42f;
        y_out[i] = y + 0.01f;
        b_out[i] = (mixed[2] - y) + 0.55f;
    }
}

// One plane (or the product of two) blurred horizontally, zero past both ends.
static void blur_row(const sp_ssimulacra2 *self, scale_state *scale, const float *a, const float *b, float *out) {
    const int width = scale->width;
    float *padded = scale->padded;
    float *middle = padded + RADIUS;
    if (b == NULL) {
        memcpy(middle, a, sizeof(float) * (size_t)width);
    } else {
        for (int i = 0; i < width; i++) middle[i] = a[i] * b[i];
    }
    for (int k = 0; k < RADIUS; k++) middle[-1 - k] = middle[width + k] = 0;
    const float *w = self->kernel + RADIUS;
    for (int i = 0; i < width; i++) {
        const float *p = middle + i;
        out[i] = w[0] * p[0] + w[1] * (p[-1] + p[1]) + w[2] * (p[-2] + p[2]) + w[3] * (p[-3] + p[3]) +
                 w[4] * (p[-4] + p[4]) + w[5] * (p[-5] + p[5]);
    }
}

// Row `y` blurred vertically (mirrored at the top and bottom: "d c b a | a b c d") and pooled into the
// scale's sums.
static void pool_row(const sp_ssimulacra2 *self, scale_state *scale, int y) {
    const int width = scale->width;
    const size_t plane_row = (size_t)PLANES * width;
    const float *rows[TAPS];
    for (int k = -RADIUS; k <= RADIUS; k++) {
        int source = y + k;
        if (source < 0) source = -source - 1;
        if (source >= scale->height) source = 2 * scale->height - 1 - source;
        rows[k + RADIUS] = scale->blurred + (size_t)(source % TAPS) * plane_row;
    }
    const float *w = self->kernel + RADIUS;
    const float *r0 = rows[RADIUS];
    const float *a1 = rows[RADIUS - 1], *b1 = rows[RADIUS + 1], *a2 = rows[RADIUS - 2], *b2 = rows[RADIUS + 2];
    const float *a3 = rows[RADIUS - 3], *b3 = rows[RADIUS + 3], *a4 = rows[RADIUS - 4], *b4 = rows[RADIUS + 4];
    const float *a5 = rows[RADIUS - 5], *b5 = rows[RADIUS + 5];
    float *column = scale->column;
    for (size_t i = 0; i < plane_row; i++) {
        column[i] = w[0] * r0[i] + w[1] * (a1[i] + b1[i]) + w[2] * (a2[i] + b2[i]) + w[3] * (a3[i] + b3[i]) +
                    w[4] * (a4[i] + b4[i]) + w[5] * (a5[i] + b5[i]);
    }
    const float *xyb = scale->xyb + (size_t)(y % TAPS) * 6 * width;
    for (int c = 0; c < 3; c++) {
        const float *mu1 = scale->column + (size_t)(5 * c) * width, *mu2 = mu1 + width;
        const float *s11 = mu2 + width, *s22 = s11 + width, *s12 = s22 + width;
        const float *x1 = xyb + (size_t)c * width, *x2 = xyb + (size_t)(3 + c) * width;
        // A row's sums in float (at most some thousands of terms under 1, mostly far under), then in double.
        float ssim = 0, ssim4 = 0, artefact = 0, artefact4 = 0, lost = 0, lost4 = 0;
        int i = 0;
#if defined(__SSE2__)
        {
            const __m128 one = _mm_set1_ps(1.0f), two = _mm_set1_ps(2.0f), c2 = _mm_set1_ps(0.0009f);
            const __m128 zero = _mm_setzero_ps(), magnitude = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
            __m128 sums4[6] = {zero, zero, zero, zero, zero, zero};
            for (; i + 4 <= width; i += 4) {
                const __m128 m1 = _mm_loadu_ps(mu1 + i), m2 = _mm_loadu_ps(mu2 + i);
                const __m128 difference = _mm_sub_ps(m1, m2);
                const __m128 mean_term = _mm_sub_ps(one, _mm_mul_ps(difference, difference));
                const __m128 covariance =
                    _mm_add_ps(_mm_mul_ps(two, _mm_sub_ps(_mm_loadu_ps(s12 + i), _mm_mul_ps(m1, m2))), c2);
                const __m128 variances = _mm_add_ps(_mm_add_ps(_mm_sub_ps(_mm_loadu_ps(s11 + i), _mm_mul_ps(m1, m1)),
                                                               _mm_sub_ps(_mm_loadu_ps(s22 + i), _mm_mul_ps(m2, m2))),
                                                    c2);
                const __m128 d =
                    _mm_max_ps(_mm_sub_ps(one, _mm_div_ps(_mm_mul_ps(mean_term, covariance), variances)), zero);
                const __m128 d2 = _mm_mul_ps(d, d);
                sums4[0] = _mm_add_ps(sums4[0], d);
                sums4[1] = _mm_add_ps(sums4[1], _mm_mul_ps(d2, d2));
                const __m128 detail2 = _mm_and_ps(_mm_sub_ps(_mm_loadu_ps(x2 + i), m2), magnitude);
                const __m128 detail1 = _mm_and_ps(_mm_sub_ps(_mm_loadu_ps(x1 + i), m1), magnitude);
                const __m128 edge = _mm_sub_ps(_mm_div_ps(_mm_add_ps(one, detail2), _mm_add_ps(one, detail1)), one);
                const __m128 added = _mm_max_ps(edge, zero), lost_here = _mm_max_ps(_mm_sub_ps(zero, edge), zero);
                const __m128 added2 = _mm_mul_ps(added, added), lost2 = _mm_mul_ps(lost_here, lost_here);
                sums4[2] = _mm_add_ps(sums4[2], added);
                sums4[3] = _mm_add_ps(sums4[3], _mm_mul_ps(added2, added2));
                sums4[4] = _mm_add_ps(sums4[4], lost_here);
                sums4[5] = _mm_add_ps(sums4[5], _mm_mul_ps(lost2, lost2));
            }
            float lanes[6][4];
            for (int k = 0; k < 6; k++) _mm_storeu_ps(lanes[k], sums4[k]);
            ssim = lanes[0][0] + lanes[0][1] + lanes[0][2] + lanes[0][3];
            ssim4 = lanes[1][0] + lanes[1][1] + lanes[1][2] + lanes[1][3];
            artefact = lanes[2][0] + lanes[2][1] + lanes[2][2] + lanes[2][3];
            artefact4 = lanes[3][0] + lanes[3][1] + lanes[3][2] + lanes[3][3];
            lost = lanes[4][0] + lanes[4][1] + lanes[4][2] + lanes[4][3];
            lost4 = lanes[5][0] + lanes[5][1] + lanes[5][2] + lanes[5][3];
        }
#endif
        for (; i < width; i++) {
            float m1 = mu1[i], m2 = mu2[i];
            float mean_term = 1.0f - (m1 - m2) * (m1 - m2);
            float covariance = 2.0f * (s12[i] - m1 * m2) + 0.0009f;
            float variances = (s11[i] - m1 * m1) + (s22[i] - m2 * m2) + 0.0009f;
            float d = fmaxf(1.0f - mean_term * covariance / variances, 0.0f);
            ssim += d;
            ssim4 += (d * d) * (d * d);
            float edge = (1.0f + fabsf(x2[i] - m2)) / (1.0f + fabsf(x1[i] - m1)) - 1.0f;
            float added = fmaxf(edge, 0.0f), lost_here = fmaxf(-edge, 0.0f);
            artefact += added;
            artefact4 += (added * added) * (added * added);
            lost += lost_here;
            lost4 += (lost_here * lost_here) * (lost_here * lost_here);
        }
        double *sums = scale->sums[c];
        sums[0] += ssim;
        sums[1] += ssim4;
        sums[2] += artefact;
        sums[3] += artefact4;
        sums[4] += lost;
        sums[5] += lost4;
    }
    scale->rows_done = y + 1;
}

static void push_linear(sp_ssimulacra2 *self, int s, const float *row);

// Averages pairs of samples of each of the 6 planes of `row` (width `width`) into `out` (a lone last sample
// stays as it is); `accumulate`: the average of that and what `out` holds.
static void halve_row(const float *row, int width, float *out, int accumulate) {
    const int half = (width + 1) / 2;
    for (int p = 0; p < 6; p++) {
        const float *in = row + (size_t)p * width;
        float *o = out + (size_t)p * half;
        for (int i = 0; i < half; i++) {
            float value = 2 * i + 1 < width ? 0.5f * (in[2 * i] + in[2 * i + 1]) : in[2 * i];
            o[i] = accumulate ? 0.5f * (o[i] + value) : value;
        }
    }
}

// Takes the next linear row (6 planes) of scale `s`.
static void push_linear(sp_ssimulacra2 *self, int s, const float *row) {
    scale_state *scale = &self->scales[s];
    const int width = scale->width, y = scale->rows_in;
    if (y >= scale->height) return;
    float *xyb = scale->xyb + (size_t)(y % TAPS) * 6 * width;
    to_xyb(self, row, row + width, row + 2 * (size_t)width, xyb, xyb + width, xyb + 2 * (size_t)width, width);
    to_xyb(self, row + 3 * (size_t)width, row + 4 * (size_t)width, row + 5 * (size_t)width, xyb + 3 * (size_t)width,
           xyb + 4 * (size_t)width, xyb + 5 * (size_t)width, width);
    float *blurred = scale->blurred + (size_t)(y % TAPS) * PLANES * width;
    for (int c = 0; c < 3; c++) {
        const float *x1 = xyb + (size_t)c * width, *x2 = xyb + (size_t)(3 + c) * width;
        float *out = blurred + (size_t)(5 * c) * width;
        blur_row(self, scale, x1, NULL, out);
        blur_row(self, scale, x2, NULL, out + width);
        blur_row(self, scale, x1, x1, out + 2 * (size_t)width);
        blur_row(self, scale, x2, x2, out + 3 * (size_t)width);
        blur_row(self, scale, x1, x2, out + 4 * (size_t)width);
    }
    scale->rows_in = y + 1;
    if (y >= RADIUS) pool_row(self, scale, y - RADIUS);
    if (s + 1 < self->scale_count) {
        halve_row(row, width, scale->pending, y % 2);
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
            for (int i = 0; i < width; i++) {
                const uint8_t *pixel = in + (size_t)i * channels;
                red[i] = self->to_linear[pixel[0]];
                green[i] = self->to_linear[channels >= 3 ? pixel[1] : pixel[0]];
                blue[i] = self->to_linear[channels >= 3 ? pixel[2] : pixel[0]];
            }
        }
        push_linear(self, 0, self->row);
    }
}

// Pools the rows a scale has left and hands a lone last row to the next scale, then finishes that one.
static void finish_scale(sp_ssimulacra2 *self, int s) {
    scale_state *scale = &self->scales[s];
    for (int y = scale->rows_done; y < scale->height; y++) pool_row(self, scale, y);
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
            const double *sums = scale->sums[c];
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
