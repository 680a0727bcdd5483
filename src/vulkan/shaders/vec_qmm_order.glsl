// The -qmm members' chain (matmul_vec.comp with QMM_ORDER): the entries a step's lanes hand over and the
// threads that add them in order, as matmul_qmm.comp adds its blocks. Included after the type's piece_isums.
// The DEPTH steps' entries (super-blocks; Q8_0's, IQ4_XS's blocks): integer sums by (entry, output, row), d (and dmin)
// by output, input scales and sums of squares by row: what the chaining threads add in order.
#ifndef ENTRIES_A_GROUP
#define ENTRIES_A_GROUP 1
#endif
const uint QE = STEP_GROUPS * DEPTH * ENTRIES_A_GROUP;
#ifdef HAS_MINS
shared ivec2 Qsm[QE * NO * R];
shared vec2 Qd[QE * NO];
#else
shared int Qsm[QE * NO * R];
shared float Qd[QE * NO];
#endif
shared float Qxd[QE * R], Qss[QE * R];
shared float Qrow_ss[R];
// Thread o R + r adds (row r, output o)'s entries e0 .. e0 + QE - 1 (of `entries`) to acc, and thread NO R + r
// row r's sums of squares to ss, in order: acc = fma(d d_x, S, acc) (then, Q4_K and Q5_K, acc = fma(-(dmin d_x), M, acc)).
// (Called outside the loops over register arrays: a rolled loop inside one would keep it rolled.)
void add_in_order(uint e0, uint entries, uint rows, uint outs, inout float acc, inout float ss) {
  const uint t = gl_LocalInvocationID.x;
  if (t < NO * R) {
    const uint o = t / R, r = t % R;
    if (o < outs && r < rows)
      for (uint j = 0; j < QE && e0 + j < entries; j++) {
        const float xd = Qxd[j * R + r];
#ifdef HAS_MINS
        const vec2 d = Qd[j * NO + o];
        const ivec2 sm = Qsm[(j * NO + o) * R + r];
        precise float a = fma(d.x * xd, float(sm.x), acc);
        a = fma(-(d.y * xd), float(sm.y), a);
#else
        precise float a = fma(Qd[j * NO + o] * xd, float(Qsm[(j * NO + o) * R + r]), acc);
#endif
        acc = a;
      }
  } else if (t < NO * R + R && p.norm != 0 && t - NO * R < rows) {
    for (uint j = 0; j < QE && e0 + j < entries; j++) {
      precise float s = ss + Qss[j * R + t - NO * R];
      ss = s;
    }
  }
}

// Thread t's entry in step s: its group's (a K-quant's super-block), or its own block (Q8_0, IQ4_XS).
uint entry_of(uint s, uint t) { return ENTRIES_A_GROUP == 1 ? s * STEP_GROUPS + t / 8 : (s * STEP_GROUPS + t / 8) * 8 + t % 8; }
