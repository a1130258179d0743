// Fresh mma.sync m16n8k32 e4m3 x e4m3 + f32 -> f32 ground truth for fp8lab,
// written directly as golden record files (../shared/golden/h200/README.md):
// one record per output element, a = row m of A (k = 0..31), b = column n of
// B, c, d. New seed, four input kinds as the shared capture had them.
// Build and run on a Hopper GPU:
//   nvcc -O2 -arch=sm_90a -o fresh_mma_sync fresh_mma_sync.cu && ./fresh_mma_sync OUTDIR [SEED]
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
#include <cmath>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "CUDA %s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

// One m16n8k32 per warp. A: 16x32 row-major bytes; B: 8x32 (column n of the
// KxN matrix, k contiguous); C, D: 16x8 row-major f32. Fragment layout of
// the PTX ISA for m16n8k32 .e4m3.
__global__ void mma(const uint8_t* A, const uint8_t* B, const float* C, float* D, int n) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= n) return;
  const uint8_t* a = A + (size_t)warp * 512;
  const uint8_t* b = B + (size_t)warp * 256;
  const float* c = C + (size_t)warp * 128;
  float* d = D + (size_t)warp * 128;
  int g = lane >> 2, t = lane & 3;
  auto word = [](const uint8_t* p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; };
  uint32_t a0 = word(a + g * 32 + t * 4), a1 = word(a + (g + 8) * 32 + t * 4);
  uint32_t a2 = word(a + g * 32 + t * 4 + 16), a3 = word(a + (g + 8) * 32 + t * 4 + 16);
  uint32_t b0 = word(b + g * 32 + t * 4), b1 = word(b + g * 32 + t * 4 + 16);
  float c0 = c[g * 8 + t * 2], c1 = c[g * 8 + t * 2 + 1], c2 = c[(g + 8) * 8 + t * 2], c3 = c[(g + 8) * 8 + t * 2 + 1];
  float d0, d1, d2, d3;
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
  d[g * 8 + t * 2] = d0; d[g * 8 + t * 2 + 1] = d1; d[(g + 8) * 8 + t * 2] = d2; d[(g + 8) * 8 + t * 2 + 1] = d3;
}

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : ".";
  unsigned long long seed = argc > 2 ? strtoull(argv[2], 0, 10) : 777;
  const int N = 32;  // warps: 32 x 128 = 4096 records per file
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> hA(N * 512), hB(N * 256);
  std::vector<float> hC(N * 128), hD(N * 128);
  uint8_t *dA, *dB; float *dC, *dD;
  CK(cudaMalloc(&dA, hA.size())); CK(cudaMalloc(&dB, hB.size()));
  CK(cudaMalloc(&dC, hC.size() * 4)); CK(cudaMalloc(&dD, hD.size() * 4));
  const char* names[] = {"allcodes", "narrow", "allexp", "normal"};
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int mode = 0; mode < 4; mode++) {
    auto code = [&]() -> uint8_t {
      uint8_t v;
      if (mode == 0) { do { v = rng() & 0xFF; } while ((v & 0x7F) == 0x7F); }
      else if (mode == 1) { int e = 6 + rng() % 4; v = (uint8_t)(((rng() & 1) << 7) | (e << 3) | (rng() & 7)); }
      else if (mode == 2) { int e = rng() % 16; v = (uint8_t)(((rng() & 1) << 7) | (e << 3) | (rng() & 7)); if ((v & 0x7F) == 0x7F) v--; }
      else {  // N(0,1) rounded to e4m3 by the host: nearest code by search
        float x = nd(rng); uint8_t best = 0; float bd = 1e30f;
        for (int k = 0; k < 256; k++) {
          if ((k & 0x7F) == 0x7F) continue;
          int s = k >> 7, e = (k >> 3) & 15, m = k & 7;
          float r = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
          if (s) r = -r;
          if (fabsf(r - x) < bd) { bd = fabsf(r - x); best = (uint8_t)k; }
        }
        v = best;
      }
      return v;
    };
    for (auto& v : hA) v = code();
    for (auto& v : hB) v = code();
    for (size_t i = 0; i < hC.size(); i++)
      hC[i] = (i % 8 == 0) ? 0.f : nd(rng) * ldexpf(1.f, (int)(rng() % 61) - 30 + (mode == 1 ? 10 : 0));
    CK(cudaMemcpy(dA, hA.data(), hA.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, hB.data(), hB.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dC, hC.data(), hC.size() * 4, cudaMemcpyHostToDevice));
    mma<<<N / 4, 128>>>(dA, dB, dC, dD, N);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hD.data(), dD, hD.size() * 4, cudaMemcpyDeviceToHost));
    char path[1024];
    snprintf(path, sizeof path, "%s/fresh_mma_sync_e4m3_%s.tsv", out, names[mode]);
    FILE* f = fopen(path, "w");
    fprintf(f, "# fp8lab golden records v1\n# model: sm90.mma.sync.e4m3.f32\n# record: d = step(a, b, c)\n# a-format: e4m3\n# L: 32\n");
    cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
    fprintf(f, "# device: %s (sm_%d%d), seed %llu\n# op: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (inline PTX); inputs: %s\n", p.name, p.major, p.minor, seed, names[mode]);
    int n = 0;
    for (int w = 0; w < N; w++) for (int m = 0; m < 16; m++) for (int j = 0; j < 8; j++) {
      float c = hC[w * 128 + m * 8 + j], d = hD[w * 128 + m * 8 + j];
      if (!std::isfinite(c) || !std::isfinite(d)) continue;
      for (int k = 0; k < 32; k++) fprintf(f, "%02x", hA[w * 512 + m * 32 + k]);
      fputc('\t', f);
      for (int k = 0; k < 32; k++) fprintf(f, "%02x", hB[w * 256 + j * 32 + k]);
      uint32_t cb, db; memcpy(&cb, &c, 4); memcpy(&db, &d, 4);
      fprintf(f, "\t%08x\t%08x\n", cb, db);
      n++;
    }
    fclose(f);
    printf("%s: %d records\n", path, n);
  }
  return 0;
}
