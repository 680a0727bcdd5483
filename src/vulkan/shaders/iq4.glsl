// IQ4_NL's and IQ4_XS's 16 values (a 4-bit index each), as GGML's kvalues_iq4nl: -127, -104, -83, -65, -49,
// -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, held as signed bytes four a word and the word picked by
// selects, not as an array: a table indexed at run time lives in memory on a GPU (a load a weight, its
// lanes' different indices serialised), these are a few register operations.
float iq4_value(uint q) {
  const uint word = q < 8u ? (q < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (q < 12u ? 0x26190D01u : 0x71594535u);
  return float(bitfieldExtract(int(word), int(8u * (q % 4u)), 8));
}
