// ggml-quant-oracle: writes test/data/ggml-quant/<type>.bin, ggml's own quantization of a few fixed
// pseudo-random rows, so that test/ggml-quant.test.ts can check that Folio reads ggml's block layouts bit
// for bit (not merely layouts that agree with themselves). Not part of Folio's build: build.sh in this
// folder builds it against a ggml build (ggml-org/ggml: libggml-base for quantization, libggml-cpu for the
// dot products) and regenerates the files.
//
// File layout (little-endian):
//   char     magic[8] = "FGGMLQ01"
//   u32      type        ggml type id of the weights
//   u32      n           elements per row
//   u32      rows
//   u32      act_type    ggml type id of the activation blocks below (ggml's vec_dot_type: Q8_K or Q8_0)
//   u8       w[rows][row_bytes(type, n)]        ggml_quantize_chunk(type, ...), no importance matrix
//   f32      deq[rows][n]                       ggml's to_float of those blocks
//   u8       act[row_bytes(act_type, n)]        one activation row, quantized by ggml's CPU from_float
//   f32      dot[rows]                          ggml's CPU vec_dot of each weight row with it
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

enum { N = 512, ROWS = 2 };

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((rng_state >> 11) + 0.5) / 9007199254740992.0;
}
static float normal(void) { return (float)(sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform())); }

static void put(FILE* f, const void* p, size_t n) {
  if (fwrite(p, 1, n, f) != n) {
    perror("write");
    exit(1);
  }
}
static void put_u32(FILE* f, uint32_t v) { put(f, &v, 4); }

static void write_type(const char* dir, enum ggml_type type, const char* name) {
  // Row 0: normal(0, 1). Row 1: heavy tails (cubes of normals) at a small scale, with a zero stretch at
  // elements 64..95 (whole zero groups and sub-blocks).
  float x[ROWS][N];
  for (int i = 0; i < N; ++i) x[0][i] = normal();
  for (int i = 0; i < N; ++i) {
    const float g = normal();
    x[1][i] = 0.01f * g * g * g;
  }
  for (int i = 64; i < 96; ++i) x[1][i] = 0;
  float act[N];
  for (int i = 0; i < N; ++i) act[i] = 2 * normal();

  const size_t rb = ggml_row_size(type, N);
  uint8_t* w = malloc(rb * ROWS);
  ggml_quantize_chunk(type, &x[0][0], w, 0, ROWS, N, NULL);
  float deq[ROWS][N];
  for (int r = 0; r < ROWS; ++r) ggml_get_type_traits(type)->to_float(w + r * rb, deq[r], N);

  const struct ggml_type_traits_cpu* cpu = ggml_get_type_traits_cpu(type);
  const enum ggml_type act_type = cpu->vec_dot_type;
  const size_t act_bytes = ggml_row_size(act_type, N);
  uint8_t* actq = malloc(act_bytes);
  ggml_get_type_traits_cpu(act_type)->from_float(act, actq, N);
  float dot[ROWS];
  for (int r = 0; r < ROWS; ++r) cpu->vec_dot(N, &dot[r], 0, w + r * rb, 0, actq, 0, 1);

  char path[1024];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  put(f, "FGGMLQ01", 8);
  put_u32(f, type);
  put_u32(f, N);
  put_u32(f, ROWS);
  put_u32(f, act_type);
  put(f, w, rb * ROWS);
  put(f, deq, sizeof deq);
  put(f, actq, act_bytes);
  put(f, dot, sizeof dot);
  fclose(f);
  printf("%s: %s x %s, dots %.6g %.6g\n", path, ggml_type_name(type), ggml_type_name(act_type), dot[0], dot[1]);
  free(w);
  free(actq);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ggml-quant-oracle OUT_DIR\n");
    return 2;
  }
  ggml_cpu_init();
  write_type(argv[1], GGML_TYPE_Q2_K, "q2_k");
  write_type(argv[1], GGML_TYPE_Q3_K, "q3_k");
  write_type(argv[1], GGML_TYPE_IQ4_NL, "iq4_nl");
  write_type(argv[1], GGML_TYPE_IQ4_XS, "iq4_xs");
  return 0;
}
