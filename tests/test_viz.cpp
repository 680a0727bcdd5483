// Forward traces (every decoder reports its rows; committed tokens rebuild the output; tracing changes
// nothing), the trajectory page (one row per forward, escaped text, atomic write) and the SVG charts
// (well-formed, one mark per data point), and the image gallery (one rect per pixel, the forward map, a real PNG).
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "decode/options.h"
#include "model/loader.h"
#include "test_support.h"
#include "formats/image.h"
#include "viz/image_page.h"
#include "viz/svg.h"
#include "viz/trace_doc.h"
#include "viz/trajectory_page.h"

namespace jf {
namespace {

using viz::RowFate;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) n++;
  return n;
}

// Minimal XML well-formedness: every start tag is closed in order (self-closing ones count as both), no
// stray '<' or '&' in text. Enough to catch an unescaped label or an unbalanced element.
bool well_formed(const std::string& s, std::string* why) {
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t semi = s.find(';', i);
      if (semi == std::string::npos || semi - i > 8) return *why = "bare & at " + std::to_string(i), false;
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      i++;
      continue;
    }
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return *why = "unclosed tag", false;
    std::string tag = s.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return *why = "'<' inside a tag: " + tag, false;
    if (count(tag, "\"") % 2) return *why = "odd quotes in " + tag, false;
    i = end + 1;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return *why = "mismatched </" + tag.substr(1) + ">", false;
      stack.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
  }
  if (!stack.empty()) return *why = "unclosed <" + stack.back() + ">", false;
  return true;
}

class TraceOnStories : public ::testing::Test {
 protected:
  void SetUp() override {
    JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
    lm = load_model(path);
    cfg.eos_ids = {lm.tokenizer->eos()};
    cfg.max_new_tokens = 60;
    prompt = lm.tokenizer->encode("Lily and Ben went to the park. They saw a big dog.", true, false);
  }
  LoadedModel lm;
  GenerationConfig cfg;
  std::vector<int32_t> prompt;
};

TEST_F(TraceOnStories, EveryDecoderTracesEveryForwardAndItsCommittedTokensMakeTheOutput) {
  Session s(*lm.model, 512);
  // Rows as the parameters say (not priced): every role appears, and a sampled output does not follow timings.
  for (std::string spec : {"ar", "jacobi:block=6:draft-policy=fixed", "lookahead:W=4:N=3:G=4:draft-policy=fixed", "pld",
                           "multiblock:block=4:K=3:r=0.5:draft-policy=fixed", "sjd:draft-policy=fixed"}) {
    DecoderOptions o = parse_decoder_spec(spec, DecoderOptions{});
    GenerationConfig c = cfg;
    if (o.name == "sjd") c.sampling.temperature = 0.8f;  // sjd is the sampling decoder
    o.validate(c.sampling.greedy());
    const GenerationResult plain = make_decoder(o)->generate(s, prompt, c);
    ForwardTrace trace;
    c.trace = &trace;
    const GenerationResult r = make_decoder(o)->generate(s, prompt, c);
    ASSERT_EQ(r.tokens, plain.tokens) << spec << ": tracing changed the output";
    ASSERT_EQ(static_cast<int64_t>(trace.forwards.size()), r.stats.n_forwards) << spec;
    std::vector<int32_t> joined;
    int64_t rows = 0;
    std::map<RowRole, int> roles;
    std::set<int> blocks;
    for (const ForwardRecord& f : trace.forwards) {
      joined.insert(joined.end(), f.committed.begin(), f.committed.end());
      rows += static_cast<int64_t>(f.tokens.size());
      ASSERT_EQ(f.positions.size(), f.tokens.size());
      ASSERT_EQ(f.tags.size(), f.tokens.size());
      ASSERT_EQ(f.tags[0].role, RowRole::Pending) << spec;
      // The pending token is the last committed one, at its own position in prompt + output.
      ASSERT_EQ(f.positions[0] + 1, static_cast<int>(prompt.size() + joined.size() - f.committed.size())) << spec;
      for (const RowTag& t : f.tags) roles[t.role]++, blocks.insert(t.block);
    }
    EXPECT_EQ(joined, r.tokens) << spec;
    EXPECT_EQ(rows, r.stats.n_forward_rows) << spec;
    if (o.name != "ar") {
      EXPECT_GT(roles[RowRole::Draft] + roles[RowRole::Candidate], 0) << spec << ": no drafted rows";
    } else {
      EXPECT_EQ(rows, r.stats.n_forwards);
    }
    if (o.name == "lookahead") {
      EXPECT_GT(roles[RowRole::Window], 0);
    }
    if (o.name == "multiblock") {
      EXPECT_GT(roles[RowRole::Block], 0) << "no pseudo-active block rows";
      EXPECT_TRUE(blocks.count(1));
    }
  }
}

TEST_F(TraceOnStories, TraceDocumentRoundTripsAndThePageHasOneRowPerForward) {
  Session s(*lm.model, 512);
  DecoderOptions o = parse_decoder_spec("jacobi:block=5", DecoderOptions{});
  ForwardTrace trace;
  GenerationConfig c = cfg;
  c.trace = &trace;
  const GenerationResult r = make_decoder(o)->generate(s, prompt, c);
  viz::TraceDoc d;
  d.decoder = "jacobi <b>";
  d.prompt = prompt;
  d.output = r.tokens;
  d.text = lm.tokenizer->decode(r.tokens);
  d.trace = trace;
  for (int32_t t : d.full_tokens()) d.pieces[t] = lm.tokenizer->decode(std::span<const int32_t>(&t, 1));
  for (const auto& f : trace.forwards)
    for (int32_t t : f.tokens) d.pieces[t] = lm.tokenizer->decode(std::span<const int32_t>(&t, 1));
  d.pieces[r.tokens[0]] = "<script>alert('x')</script> & \"q\"";  // text that must be escaped

  test::TempDir dir("viz");
  viz::write_trace(dir / "t.json", d);
  const viz::TraceDoc back = viz::read_trace(dir / "t.json");
  EXPECT_EQ(back.output, d.output);
  EXPECT_EQ(back.pieces, d.pieces);
  ASSERT_EQ(back.trace.forwards.size(), trace.forwards.size());
  for (size_t i = 0; i < trace.forwards.size(); i++) {
    EXPECT_EQ(back.trace.forwards[i].tokens, trace.forwards[i].tokens);
    EXPECT_EQ(back.trace.forwards[i].positions, trace.forwards[i].positions);
    EXPECT_EQ(back.trace.forwards[i].committed, trace.forwards[i].committed);
  }

  viz::write_trajectory_html(dir / "p.html", back);
  std::ifstream f(dir / "p.html");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string html = ss.str();
  EXPECT_EQ(count(html, "<tr class=\"fwd\">"), static_cast<int>(trace.forwards.size()));
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"), std::string::npos);
  EXPECT_NE(html.find("jacobi &lt;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos) << "the page must not load anything";
  std::string why;
  EXPECT_TRUE(well_formed(html.substr(html.find("<html>")), &why)) << why;
  EXPECT_GT(count(html, "tok accepted"), 0);
  // Written atomically: no temp file is left beside it.
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
}

TEST(Trajectory, RowFatesAgainstTheFinalText) {
  // text: positions 0..6 = 10 11 12 13 14 15 16; the forward starts at pending position 2 (token 12).
  const std::vector<int32_t> full = {10, 11, 12, 13, 14, 15, 16};
  ForwardRecord f;
  f.tokens = {12, 13, 99, 15, 14, 77};
  f.positions = {2, 3, 4, 5, 6, 4};
  f.tags = {{RowRole::Pending, 0}, {RowRole::Draft, 0}, {RowRole::Draft, 0}, {RowRole::Draft, 0},
            {RowRole::Draft, 0}, {RowRole::Window, 0}};
  f.committed = {13, 14};  // draft 13 accepted, 14 is the model's own token at position 4
  const std::vector<RowFate> want = {RowFate::Pending, RowFate::Accepted, RowFate::Rejected, RowFate::Correct,
                                     RowFate::Misplaced, RowFate::Rejected};
  EXPECT_EQ(viz::classify_rows(f, full), want);
}

TEST(Trajectory, PageWithoutAModel) {
  viz::TraceDoc d;
  d.decoder = "multiblock";
  d.prompt = {1, 2};
  d.output = {3, 4};
  d.pieces = {{1, "a"}, {2, "    "}, {3, "b"}, {4, "\n"}};
  ForwardRecord f;
  f.tokens = {2, 3, 9, 4};
  f.positions = {1, 2, 3, 3};
  f.tags = {{RowRole::Pending, 0}, {RowRole::Draft, 0}, {RowRole::Draft, 0}, {RowRole::Block, 1}};
  f.committed = {3, 4};
  d.trace.forwards = {f};
  const std::string html = viz::trajectory_html(d);
  EXPECT_EQ(count(html, "<tr class=\"fwd\">"), 1);
  EXPECT_NE(html.find("\xC2\xB7\xC2\xB7\xC2\xB7\xC2\xB7"), std::string::npos) << "spaces-only token shown as dots";
  EXPECT_NE(html.find("\xE2\x86\xB5"), std::string::npos) << "newline token shown as a return arrow";
  EXPECT_NE(html.find("#9"), std::string::npos) << "a token without text shows its id";
  EXPECT_NE(html.find("blk1"), std::string::npos);
  EXPECT_NE(html.find("block 1"), std::string::npos);
}

// A forward that verified a tree: its rows name their parents, the trace keeps them, and the page folds the tree
// under the path the model took (the accepted branch, not its rejected sibling).
TEST(Trajectory, ATreesRowsKeepTheirParentsAndThePageDrawsTheTree) {
  viz::TraceDoc d;
  d.decoder = "jacobi";
  d.prompt = {1};
  d.output = {5, 6, 7};
  d.pieces = {{1, "a"}, {5, "x"}, {6, "y"}, {7, "z"}, {8, "w"}};
  ForwardRecord f;
  f.tokens = {1, 8, 5, 6};  // the root, a rejected guess, the accepted one and its accepted child
  f.positions = {0, 1, 1, 2};
  f.tags = {{RowRole::Pending, 0}, {RowRole::Draft, 0}, {RowRole::Draft, 0}, {RowRole::Draft, 0}};
  f.parents = {-1, 0, 0, 2};
  f.committed = {5, 6, 7};
  d.trace.forwards = {f};
  const viz::TraceDoc back = viz::trace_from_json(viz::trace_to_json(d));
  ASSERT_EQ(back.trace.forwards.size(), 1u);
  EXPECT_EQ(back.trace.forwards[0].parents, f.parents);
  const std::string html = viz::trajectory_html(back);
  EXPECT_EQ(count(html, "<details>"), 1);
  EXPECT_EQ(count(html, "<li>"), 4);
  const std::string summary = html.substr(html.find("<summary>"), html.find("</summary>") - html.find("<summary>"));
  EXPECT_NE(summary.find(">y<"), std::string::npos) << "the accepted path in the summary";
  EXPECT_EQ(summary.find(">w<"), std::string::npos) << "not the rejected branch";
  std::string why;
  EXPECT_TRUE(well_formed(html.substr(html.find("<html>")), &why)) << why;
  // A parent that is not an earlier row is refused.
  std::string bad = viz::trace_to_json(d);
  bad.replace(bad.find("\"draft\",0,2]"), 14, "\"draft\",0,3]");
  EXPECT_THROW(viz::trace_from_json(bad), Error);
}

TEST(TraceDoc, MalformedTracesAreErrors) {
  EXPECT_THROW(viz::trace_from_json("not json"), Error);
  EXPECT_THROW(viz::trace_from_json("{}"), Error);
  EXPECT_THROW(viz::trace_from_json(R"({"format":"jf-trace-1","decoder":"x","prompt":[1],"output":[],"text":"",)"
                                    R"("pieces":{},"forwards":[{"rows":[[1,0,"bogus",0]],"committed":[]}]})"),
               Error);
  EXPECT_THROW(viz::read_trace("/nonexistent/trace.json"), Error);
}

TEST(Svg, BarChartIsWellFormedWithOneMarkPerBar) {
  std::vector<viz::Bar> bars = {{"ar", 1.0}, {"jacobi <n=4>", 1.4}, {"pld & co", 2.2}, {"nan", NAN}};
  const std::string svg = viz::bar_chart_svg("speedup \"x\"", "speedup over ar", bars, 1.0);
  std::string why;
  EXPECT_TRUE(well_formed(svg, &why)) << why;
  EXPECT_EQ(count(svg, "class=\"mark\""), 4);
  EXPECT_NE(svg.find("jacobi &lt;n=4&gt;"), std::string::npos);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
}

TEST(Svg, LineChartHasOneMarkPerPoint) {
  viz::LineChart c;
  c.title = "cost";
  c.x_label = "rows M";
  c.y_label = "ms";
  c.series.push_back({"ctx 64", {1, 2, 4, 8}, {1.0, 1.1, 1.3, 2.0}});
  c.series.push_back({"ctx 512", {1, 2, 4}, {1.5, 1.6, 1.9}});
  c.x_marks = {4};
  c.x_mark_labels = {"knee <4>"};
  const std::string svg = viz::line_chart_svg(c);
  std::string why;
  EXPECT_TRUE(well_formed(svg, &why)) << why;
  EXPECT_EQ(count(svg, "class=\"mark\""), 7);
  EXPECT_EQ(count(svg, "<polyline"), 2);
}

// "s<k>" (built by appending: g++ 12 warns falsely on "s" + std::to_string(k), -Wrestrict).
std::string series_name(int k) {
  std::string name = "s";
  return name += std::to_string(k);
}

// Past eight series the colours repeat; the marks then change shape so every curve stays apart.
TEST(Svg, LineChartMarksChangeShapeOnceColoursRepeat) {
  viz::LineChart c;
  for (int k = 0; k < 17; k++) c.series.push_back({series_name(k), {1.0 * k}, {1.0}});
  const std::string svg = viz::line_chart_svg(c);
  std::string why;
  EXPECT_TRUE(well_formed(svg, &why)) << why;
  EXPECT_EQ(count(svg, "<circle class=\"mark\""), 8);
  EXPECT_EQ(count(svg, "<rect class=\"mark\""), 8);
  EXPECT_EQ(count(svg, "<polygon class=\"mark\""), 1);
}

// A legend longer than the plot makes the picture taller: its last entry is inside the canvas.
TEST(Svg, LongLegendsFitTheCanvas) {
  viz::LineChart c;
  for (int k = 0; k < 30; k++) c.series.push_back({series_name(k), {1.0 * k}, {1.0}});
  const std::string svg = viz::line_chart_svg(c);
  const size_t h = svg.find("height=\"");
  ASSERT_NE(h, std::string::npos);
  const double height = std::stod(svg.substr(h + 8));
  const size_t last = svg.rfind(">s29</text>");
  ASSERT_NE(last, std::string::npos);
  const size_t y = svg.rfind(" y=\"", last);
  EXPECT_LT(std::stod(svg.substr(y + 4)), height - 4);
  c.series.resize(3);  // a short legend keeps the usual size
  EXPECT_NE(viz::line_chart_svg(c).find("height=\"440.0\""), std::string::npos);
}

// ---- the image gallery ----

// A 4x3 image committed by four forwards of 3, 3, 2 and 4 pixels.
viz::ImageRun small_run(const std::string& group, const std::string& caption, const std::string& decoder) {
  viz::ImageRun r;
  r.group = group;
  r.caption = caption;
  r.decoder = decoder;
  r.seed = 7;
  r.width = 4;
  r.height = 3;
  for (int i = 0; i < 12; i++) r.pixels.push_back({static_cast<uint8_t>(20 * i), 0, static_cast<uint8_t>(255 - i)});
  r.forward_of_pixel = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3};
  return r;
}

std::vector<uint8_t> unbase64(const std::string& s) {
  const std::string k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const size_t v = k.find(c);
    if (v == std::string::npos) return {};  // not base64: the caller sees an empty result
    acc = acc << 6 | static_cast<uint32_t>(v);
    if ((bits += 6) >= 8) out.push_back(static_cast<uint8_t>(acc >> (bits -= 8)));
  }
  return out;
}

TEST(ImageGallery, MapHasOneRectPerPixelWithItsForward) {
  const std::string html = viz::image_gallery_html("gallery <1>", {small_run("a <red> & blue square", "a <red> & blue square", "sjd:block=32,pac")});
  std::string why;
  EXPECT_TRUE(well_formed(html.substr(html.find("<html>")), &why)) << why;
  EXPECT_EQ(html.find("http"), std::string::npos) << "the page must not load anything";
  EXPECT_EQ(count(html, "class=\"px\""), 12);
  EXPECT_EQ(count(html, "class=\"ip\""), 12);
  std::vector<int> forwards;
  const std::regex px("class=\"px\" data-forward=\"(\\d+)\" x=\"(\\d+)\" y=\"(\\d+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), px); it != std::sregex_iterator(); ++it) {
    forwards.push_back(std::stoi((*it)[1]));
    EXPECT_EQ(std::stoi((*it)[2]) + 4 * std::stoi((*it)[3]), static_cast<int>(forwards.size()) - 1) << "raster order";
  }
  EXPECT_EQ(forwards, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 3}));
  EXPECT_NE(html.find("<title>pixel (3, 0): forward 1, 3 tokens in that forward</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>pixel (1, 1): forward 1, 3 tokens in that forward</title>"), std::string::npos);
  EXPECT_NE(html.find("a &lt;red&gt; &amp; blue square"), std::string::npos);
  EXPECT_EQ(html.find("<red>"), std::string::npos);
  EXPECT_NE(html.find("gallery &lt;1&gt;"), std::string::npos);
  EXPECT_NE(html.find("sjd:block=32,pac"), std::string::npos);
  EXPECT_NE(html.find("seed 7"), std::string::npos);
  EXPECT_NE(html.find("4 forwards &middot; 12 tokens &middot; 3.00 tokens/forward"), std::string::npos);
  EXPECT_NE(html.find("max=\"3\" value=\"3\""), std::string::npos) << "the slider spans forwards 0..3";
  // Histogram: one forward of 2 pixels, two of 3, one of 4; none of 0 or 1.
  EXPECT_EQ(count(html, "class=\"hbar\""), 3);
  EXPECT_NE(html.find("data-tokens=\"2\" data-forwards=\"1\""), std::string::npos);
  EXPECT_NE(html.find("data-tokens=\"3\" data-forwards=\"2\""), std::string::npos);
  EXPECT_NE(html.find("data-tokens=\"4\" data-forwards=\"1\""), std::string::npos);
}

TEST(ImageGallery, EmbedsTheImageAsAnUpscaledPng) {
  const viz::ImageRun r = small_run("g", "c", "ar");
  const std::string html = viz::image_gallery_html("t", {r});
  const std::string tag = "data:image/png;base64,";
  const size_t at = html.find(tag);
  ASSERT_NE(at, std::string::npos);
  const size_t from = at + tag.size();
  const std::vector<uint8_t> png = unbase64(html.substr(from, html.find('"', from) - from));
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  ASSERT_GE(png.size(), 8u);
  EXPECT_TRUE(std::equal(signature, signature + 8, png.begin()));
  // Decoded, it is the run's pixels, each a 32x32 block (128 px across).
  const std::string path = test::temp_path("gallery.png");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  const Image img = read_png(path);
  std::filesystem::remove(path);
  ASSERT_EQ(img.width, 128);
  ASSERT_EQ(img.height, 96);
  for (int i = 0; i < 12; i++) {
    const uint8_t* p = img.at(i % 4 * 32 + 31, i / 4 * 32 + 5);
    EXPECT_EQ(p[0], r.pixels[i][0]);
    EXPECT_EQ(p[2], r.pixels[i][2]);
    EXPECT_EQ(p[3], 255);
  }
}

// Entries of one group share a row in order of the group's first entry, even when not adjacent.
TEST(ImageGallery, GroupsShareARow) {
  const std::string html = viz::image_gallery_html(
      "t", {small_run("cat", "cat-ar", "ar"), small_run("dog", "dog-ar", "ar"), small_run("cat", "cat-sjd", "sjd")});
  EXPECT_EQ(count(html, "<div class=\"row\">"), 2);
  EXPECT_EQ(count(html, "<h2>"), 2);
  const size_t cat = html.find("<h2>cat</h2>"), dog = html.find("<h2>dog</h2>");
  ASSERT_LT(cat, dog);
  EXPECT_LT(html.find("cat-ar"), html.find("cat-sjd"));
  EXPECT_LT(html.find("cat-sjd"), dog);
  EXPECT_GT(html.find("dog-ar"), dog);
}

// A forward that committed no pixel (here forward 1) shows as a bar at 0 and keeps the forward count honest.
TEST(ImageGallery, ForwardsWithoutPixelsCount) {
  viz::ImageRun r;
  r.width = 2;
  r.height = 1;
  r.pixels = {{0, 0, 0}, {255, 255, 255}};
  r.forward_of_pixel = {0, 2};
  const std::string html = viz::image_gallery_html("t", {r});
  EXPECT_NE(html.find("data-forwards=\"3\""), std::string::npos);
  EXPECT_NE(html.find("data-tokens=\"0\" data-forwards=\"1\""), std::string::npos);
  EXPECT_NE(html.find("data-tokens=\"1\" data-forwards=\"2\""), std::string::npos);
}

TEST(ImageGallery, MismatchedRunsAreErrors) {
  auto r = small_run("g", "c", "ar");
  r.pixels.pop_back();
  EXPECT_THROW(viz::image_gallery_html("t", {r}), Error);
  r = small_run("g", "c", "ar");
  r.forward_of_pixel.push_back(4);
  EXPECT_THROW(viz::image_gallery_html("t", {r}), Error);
  r = small_run("g", "c", "ar");
  r.forward_of_pixel[5] = -1;
  EXPECT_THROW(viz::image_gallery_html("t", {r}), Error);
  r = small_run("g", "c", "ar");
  r.width = 0;
  EXPECT_THROW(viz::image_gallery_html("t", {r}), Error);
  try {
    viz::write_image_gallery("/nonexistent-dir/gallery.html", "t", {small_run("g", "c", "ar")});
    FAIL() << "writing into a missing directory must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/gallery.html"), std::string::npos) << e.what();
  }
}

TEST(ImageGallery, WritesTheFileAtomically) {
  test::TempDir dir("gallery");
  const std::string path = dir.path + "/g.html";
  viz::write_image_gallery(path, "t", {small_run("g", "c", "ar")});
  EXPECT_EQ(test::read_file(path), viz::image_gallery_html("t", {small_run("g", "c", "ar")}));
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace jf
