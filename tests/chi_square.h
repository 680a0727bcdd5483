// Chi-square goodness-of-fit helpers for the statistical tests of sampling strategies.
#pragma once
#include <cmath>

namespace jf::test {

// Regularised upper incomplete gamma Q(a, x): chi-square survival is Q(df / 2, x / 2).
inline double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {  // series for P
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 1000; n++) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;  // continued fraction for Q
  for (int i = 1; i < 1000; i++) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

// Survival function of the chi-square distribution with `df` degrees of freedom.
inline double chi2_sf(double x, double df) { return gamma_q(df / 2.0, x / 2.0); }

}  // namespace jf::test
