// A weight matrix read 32 bits at a time (the device copy is padded to whole words: DeviceWeights::matrix):
// define W_BINDING before including. Types whose blocks are an odd number of 16-bit words (Q8_0, Q4_0, Q5_0,
// Q3_K, Q6_K) start every other block half-way through a word: bytes at an even i take one 32-bit load, or two
// where they straddle words.
layout(std430, binding = W_BINDING) readonly buffer Weights32 { uint W32[]; };
uint word_even(uint i) { return i % 4 == 0 ? W32[i / 4] : (W32[i / 4] >> 16) | (W32[i / 4 + 1] << 16); }
float half_even(uint i) { return unpackHalf2x16(W32[i / 4] >> (8 * (i % 4))).x; }
