//===- HalfFloat.h - bfloat16 and float16 to and from float -----*- C++ -*-===//
//
// Shared by the runtimes: 16-bit floats are reduced in float32 (MPI and Gloo
// have no 16-bit float sum), so collectives widen them, reduce, and round
// back to nearest even, once.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_HALFFLOAT_H
#define SPMD_RUNTIME_HALFFLOAT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace spmd::runtime {

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu))
    return uint16_t((bits >> 16) | 0x40); // NaN stays a (quiet) NaN
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return uint16_t(bits >> 16);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13); // inf, NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign; // zero
  } else {       // subnormal: normalize
    int shift = 0;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t exp = (bits >> 23) & 0xFFu, mant = bits & 0x7FFFFFu;
  if (exp == 0xFF) // inf, NaN
    return uint16_t(sign | 0x7C00u | (mant ? 0x200u : 0u));
  int e = int(exp) - 127 + 15;
  if (e >= 0x1F)
    return uint16_t(sign | 0x7C00u); // overflow: inf
  if (e <= 0) {                      // subnormal or zero
    if (e < -10)
      return sign;
    mant |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u)))
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = (uint32_t(e) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent: still right (up to inf)
  return uint16_t(sign | half);
}

/// Widens `count` 16-bit floats (bf16 when `brain`, else f16) to float.
inline void widen(const void *in, float *out, size_t count, bool brain) {
  const auto *h = static_cast<const uint16_t *>(in);
  for (size_t i = 0; i < count; ++i)
    out[i] = brain ? bf16ToFloat(h[i]) : f16ToFloat(h[i]);
}

/// Rounds `count` floats to 16-bit floats (bf16 when `brain`, else f16).
inline void narrow(const float *in, void *out, size_t count, bool brain) {
  auto *h = static_cast<uint16_t *>(out);
  for (size_t i = 0; i < count; ++i)
    h[i] = brain ? floatToBf16(in[i]) : floatToF16(in[i]);
}

} // namespace spmd::runtime

#endif // SPMD_RUNTIME_HALFFLOAT_H
