// The SVG writer (include/trainplan/report/svg.h).
#include "trainplan/report/svg.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"

namespace trainplan::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string num(double v) {
  TRAINPLAN_CHECK_MSG(std::isfinite(v), "a chart coordinate is not finite");
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw * (1 - 1e-9)) break;
  }
  std::vector<double> out;
  // Each tick as k·step rounded to 12 digits: 0.6, not 0.6000000000000001.
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9 && out.size() < 50; k += 1) {
    const double t = std::stod(fmt::format("{:.12g}", k * step));
    out.push_back(t == 0 ? 0.0 : t);
  }
  return out;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e7) return fmt::format("{:.3g}", v);
  if (a >= 1000) {  // thousands grouped: 12,500
    const std::string digits = fmt::format("{}", std::llabs(std::llround(v)));
    std::string out = v < 0 ? "-" : "";
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
      out.push_back(digits[i]);
    }
    return out;
  }
  if (v == std::floor(v)) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.3g}", v);
}

double scale::operator()(double v) const {
  if (log && lo > 0 && hi > lo && v > 0) return p0 + std::log(v / lo) / std::log(hi / lo) * (p1 - p0);
  if (hi == lo) return p0;
  return p0 + (v - lo) / (hi - lo) * (p1 - p0);
}

std::vector<double> scale::ticks(int target) const {
  if (!log || !(lo > 0) || !(hi > lo)) return nice_ticks(lo, hi, target);
  std::vector<double> out;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi && out.size() < 40; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * decade >= lo && m * decade <= hi) out.push_back(m * decade);
    }
  }
  return out;
}

canvas::canvas(double width_px, double height_px, std::string_view label)
    : w_(width_px), h_(height_px), label_(label) {}

namespace {
std::string tip_of(std::string_view tip) {
  return tip.empty() ? std::string() : "<title>" + escape(tip) + "</title>";
}
}  // namespace

void canvas::rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tip) {
  body_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"{}\">{}</rect>\n", num(x), num(y),
                       num(std::max(0.0, w)), num(std::max(0.0, h)), escape(css_class), tip_of(tip));
}

void canvas::line(double x1, double y1, double x2, double y2, std::string_view css_class) {
  body_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{}\"/>\n", num(x1), num(y1), num(x2),
                       num(y2), escape(css_class));
}

void canvas::circle(double cx, double cy, double r, std::string_view css_class, std::string_view tip) {
  body_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" class=\"{}\">{}</circle>\n", num(cx), num(cy), num(r),
                       escape(css_class), tip_of(tip));
}

void canvas::polyline(const std::vector<std::pair<double, double>>& points, std::string_view css_class) {
  std::string pts;
  for (const auto& [x, y] : points) pts += num(x) + "," + num(y) + " ";
  body_ += fmt::format("<polyline points=\"{}\" class=\"{}\"/>\n", pts, escape(css_class));
}

void canvas::text(double x, double y, std::string_view s, std::string_view css_class, std::string_view anchor) {
  body_ += fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\" text-anchor=\"{}\">{}</text>\n", num(x), num(y),
                       escape(css_class), escape(anchor), escape(s));
}

void canvas::vertical_text(double x, double y, std::string_view s, std::string_view css_class) {
  body_ += fmt::format("<text transform=\"translate({},{}) rotate(-90)\" class=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       num(x), num(y), escape(css_class), escape(s));
}

std::string canvas::str() const {
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
                     "role=\"img\" aria-label=\"{}\"><title>{}</title>\n{}</svg>\n",
                     num(w_), num(h_), num(w_), num(h_), escape(label_), escape(label_), body_);
}

void axes(canvas& c, const scale& x, const scale& y, std::string_view x_title, std::string_view y_title, bool x_ticks) {
  const double left = std::min(x.p0, x.p1), right = std::max(x.p0, x.p1);
  const double top = std::min(y.p0, y.p1), bottom = std::max(y.p0, y.p1);
  for (double t : y.ticks()) {
    const double py = y(t);
    c.line(left, py, right, py, "grid");
    c.text(left - 6, py + 4, tick_label(t), "tick", "end");
  }
  for (double t : x_ticks ? x.ticks() : std::vector<double>{}) {
    const double px = x(t);
    c.line(px, bottom, px, bottom + 5, "axis");
    c.text(px, bottom + 18, tick_label(t), "tick", "middle");
  }
  c.line(left, bottom, right, bottom, "axis");
  c.line(left, top, left, bottom, "axis");
  c.text((left + right) / 2, bottom + 36, x_title, "axis-label", "middle");
  c.vertical_text(left - 48, (top + bottom) / 2, y_title);
}

void legend(canvas& c, double x, double y, const std::vector<std::pair<std::string, std::string>>& entries) {
  double px = x;
  for (const auto& [cls, name] : entries) {
    c.rect(px, y - 10, 12, 12, cls);
    c.text(px + 16, y, name, "legend");
    px += 28 + 7.0 * static_cast<double>(name.size());
  }
}

}  // namespace trainplan::svg
