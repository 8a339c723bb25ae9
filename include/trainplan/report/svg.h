// A small SVG writer for the HTML report (src/html*.cc): shapes with CSS classes (the page's style sheet
// colours them, light and dark), escaped text, finite coordinates, linear scales with 1-2-5 ticks, axes.
// It draws what it is given; it computes no estimate.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainplan::svg {

/// Text escaped for XML content and attribute values (& < > " ').
std::string escape(std::string_view text);

/// A coordinate for an attribute: two decimals at most. A non-finite value is an internal error (CHECK):
/// the charts must never emit NaN.
std::string num(double v);

/// 1-2-5 tick values covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

/// A tick label: "0", "2.5", "1,200", "3e+09" for very large values.
std::string tick_label(double v);

/// Maps data values [lo, hi] to pixels [p0, p1] (p1 < p0 for a y axis); logarithmically when `log`
/// (then lo > 0).
struct scale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  bool log = false;
  double operator()(double v) const;
  /// Tick values: 1-2-5 steps, or 1, 2, 5 × powers of ten on a log scale.
  std::vector<double> ticks(int target = 5) const;
};

/// One SVG image: elements are appended in drawing order; str() closes it.
class canvas {
 public:
  /// `label`: the image's accessible name (aria-label and <title>).
  canvas(double width_px, double height_px, std::string_view label);
  /// `tip`, when given, becomes a <title> child: the browser shows it on hover.
  void rect(double x, double y, double w, double h, std::string_view css_class, std::string_view tip = {});
  void line(double x1, double y1, double x2, double y2, std::string_view css_class);
  void circle(double cx, double cy, double r, std::string_view css_class, std::string_view tip = {});
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view css_class);
  /// anchor: "start", "middle" or "end".
  void text(double x, double y, std::string_view s, std::string_view css_class = "label", std::string_view anchor = "start");
  /// Text rotated -90° about (x, y), for a y-axis label.
  void vertical_text(double x, double y, std::string_view s, std::string_view css_class = "axis-label");
  double width() const { return w_; }
  double height() const { return h_; }
  std::string str() const;

 private:
  double w_, h_;
  std::string label_;
  std::string body_;
};

/// Gridlines, ticks and labels for both axes of the plot area the scales span, with the axis titles
/// (units in them: "time per iteration (s)"). `x_ticks` false: a categorical x axis, labelled by the chart.
void axes(canvas& c, const scale& x, const scale& y, std::string_view x_title, std::string_view y_title,
          bool x_ticks = true);

/// A legend: one swatch and name per entry, in a row from (x, y).
void legend(canvas& c, double x, double y, const std::vector<std::pair<std::string, std::string>>& class_and_name);

}  // namespace trainplan::svg
