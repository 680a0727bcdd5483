// IQ4_NL's and IQ4_XS's 16 values (a 4-bit index each), as GGML's kvalues_iq4nl: -127, -104, -83, -65, -49,
// -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, held as signed bytes four a word and the word picked by
// selects, not as an array: a table indexed at run time lives in memory on a GPU (a load a weight, its
// lanes' different indices serialised), these are a few register operations.
uint iq4_word(uint q) { return q < 8u ? (q < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (q < 12u ? 0x26190D01u : 0x71594535u); }
int iq4_int(uint q) { return bitfieldExtract(int(iq4_word(q)), int(8u * (q % 4u)), 8); }
// The value as a signed byte, for the int8 kernels' packed words (no float between).
uint iq4_byte(uint q) { return (iq4_word(q) >> (8u * (q % 4u))) & 255u; }
// The value plus 128 (0..255): as a float through common.glsl's small_float_less, with no conversion instruction.
uint iq4_biased(uint q) { return iq4_byte(q) ^ 0x80u; }
float iq4_value(uint q) { return small_float_less(iq4_biased(q), 128.0); }
