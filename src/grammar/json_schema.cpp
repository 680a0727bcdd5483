// JSON Schema -> GBNF. A schema compiles to a GBNF expression (a rule name, a literal, a group) and appends the
// rules it needs; every $ref target becomes one rule, so shared and recursive schemas stay linear. allOf /
// anyOf / oneOf are flattened by merging each subschema into the schema it sits in, where that merge is
// exactly the conjunction; everything else is refused rather than approximated.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "base/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_number.h"
#include "grammar/json_schema_object.h"
#include "grammar/json_schema_text.h"
#include "grammar/regex_gbnf.h"

namespace jf {

namespace {

using namespace json_schema_text;
using Json = nlohmann::ordered_json;
using Expr = std::optional<std::string>;  // a GBNF sequence; nullopt: no text at all (a `false` schema)

constexpr int kMaxDepth = 64;
constexpr size_t kMaxElements = 200000;
constexpr size_t kMaxText = 8 << 20;  // stops the text growing long before the element count is known
constexpr size_t kMaxName = 2000;     // a property name's code points (one rule each when keys are excluded)

// The whitespace policies of the header: bounded, so a model cannot loop on it; or none at all.
constexpr const char* kFlexibleWs = R"(ws ::= | " " | "\n" [ \t]{0,40}
)";
constexpr const char* kCompactWs = "ws ::= \"\"\n";
const char* ws_rule(JsonWhitespace w) { return w == JsonWhitespace::Compact ? kCompactWs : kFlexibleWs; }

// The JSON lexicon.
constexpr const char* kCommonRules = R"(value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F\uD800-\uDFFF] | "\\" ( ["\\/bfnrt] | "u" u-bmp | "u" [dD] [89abAB] hex hex "\\u" [dD] [c-fC-F] hex hex )
u-bmp ::= [0-9a-cA-CeEfF] hex hex hex | [dD] [0-7] hex hex
hex ::= [0-9a-fA-F]
number ::= integer ( "." [0-9]{1,20} )? ( [eE] [-+]? [0-9]{1,3} )?
integer ::= "-"? ( "0" | [1-9] [0-9]{0,19} )
)";

// RFC 3339 full-date / full-time, and UUIDs; emitted once, when used.
constexpr const char* kFormatRules = R"(f-leap ::= [0-9] [0-9] ( [02468] [48] | [13579] [26] | [2468] "0" ) | ( [02468] [048] | [13579] [26] ) "00"
f-d28 ::= "0" [1-9] | "1" [0-9] | "2" [0-8]
f-date ::= [0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( f-d28 | "29" | "3" [01] ) | ( "0" [469] | "11" ) "-" ( f-d28 | "29" | "30" ) | "02-" f-d28 ) | f-leap "-02-29"
f-hm ::= ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9]
f-time ::= f-hm ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( [zZ] | [-+] f-hm )
f-date-time ::= f-date [tT] f-time
f-uuid ::= hex{8} "-" hex{4} "-" hex{4} "-" hex{4} "-" hex{12}
)";

// Types as bits; kFrac: numbers written with a fraction or an exponent ("number" is kInt | kFrac).
enum : unsigned { kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kInt = 32, kFrac = 64, kAll = 127 };

const std::set<std::string> kAnnotations = {"title",      "description", "$schema",  "$comment",  "examples",   "default",
                                            "deprecated", "readOnly",    "writeOnly", "definitions", "$defs"};
const std::set<std::string> kKeywords = {
    "type",     "enum",          "const",         "properties", "required", "additionalProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems",   "minLength",         "maxLength",
    "format",   "minimum",       "maximum",       "exclusiveMinimum", "exclusiveMaximum", "allOf", "anyOf",
    "oneOf",    "$ref",          "pattern",       "multipleOf", "minProperties", "maxProperties"};

[[noreturn]] void too_large(const std::string& what) {
  throw Error("json schema: the grammar would be too large (" + what + ", at most " + std::to_string(kMaxElements) + " elements)");
}

// A JSON pointer one level down (RFC 6901 escapes).
std::string child(const std::string& ptr, const std::string& key) {
  std::string out = ptr + "/";
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

unsigned type_bits(const Json& t, const std::string& ptr) {
  static const std::map<std::string, unsigned> names = {{"null", kNull},     {"boolean", kBool}, {"object", kObject}, {"array", kArray},
                                                        {"string", kString}, {"integer", kInt},  {"number", kInt | kFrac}};
  unsigned bits = 0;
  for (const Json& n : t.is_array() ? t : Json::array({t})) {
    if (!n.is_string() || !names.count(n.get<std::string>())) malformed("type", ptr, "has an unknown type " + n.dump());
    bits |= names.at(n.get<std::string>());
  }
  return bits;
}

unsigned value_bits(const Json& v) {
  if (v.is_null()) return kNull;
  if (v.is_boolean()) return kBool;
  if (v.is_object()) return kObject;
  if (v.is_array()) return kArray;
  if (v.is_string()) return kString;
  return v.is_number_float() ? kInt | kFrac : kInt;  // 1.0 may be written 1
}

// A non-negative integer keyword (minLength, maxItems, ...); `absent` when missing.
int64_t count_of(const Json& s, const std::string& kw, int64_t absent, const std::string& ptr) {
  if (!s.contains(kw)) return absent;
  const Json& v = s[kw];
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) malformed(kw, ptr, "must be a non-negative integer");
  return v.get<double>() > 1e15 ? int64_t(1e15) : v.get<int64_t>();
}

bool has_any(const Json& s, std::initializer_list<const char*> kws) {
  return std::any_of(kws.begin(), kws.end(), [&](const char* k) { return s.contains(k); });
}

bool asserts_nothing(const Json& s) {
  return s.is_object() && std::all_of(s.items().begin(), s.items().end(), [](const auto& kv) { return kAnnotations.count(kv.key()); });
}

class Converter {
 public:
  Converter(const Json& root, JsonWhitespace ws) : root_(root), ws_(ws) {}

  std::string run() {
    const Expr e = compile(root_, "", 0);
    std::set<std::string> nothing;  // $ref rules whose target accepts nothing
    while (!pending_.empty()) {  // $ref targets, each compiled once (nesting counts from each anew)
      const auto [target, name] = pending_.back();
      pending_.pop_back();
      const Expr t = compile(root_.at(Json::json_pointer(target)), target, 0);
      if (!t && nothing.empty()) emit("never", "[^\\x00-\\U0010FFFF]");
      if (!t) nothing.insert(name);
      emit(name, t ? *t : "never");
    }
    if (!e || nothing.count(*e)) throw Error("json schema: the schema accepts no value");
    const std::string out = "root ::= " + *e + "\n" + ws_rule(ws_) + kCommonRules + rules_;
    size_t elements = 0;
    try {
      elements = Grammar::parse(out).elements.size();
    } catch (const Error& err) {  // left recursion ({"$ref": "#"}) or a size limit of the parser
      throw Error(std::string("json schema: ") + err.what());
    }
    if (elements > kMaxElements) too_large(std::to_string(elements) + " elements");
    return out;
  }

 private:
  const Json& root_;
  JsonWhitespace ws_;
  std::string rules_;
  std::map<std::string, std::string> refs_;   // $ref target pointer -> its rule
  std::vector<std::pair<std::string, std::string>> pending_;  // targets to compile, and their rules
  std::map<std::string, unsigned> ref_types_;  // memo of types() through $ref
  bool formats_ = false, keys_ = false;
  int next_ = 0;

  void emit(const std::string& name, const std::string& body) {
    rules_ += name + " ::= " + body + "\n";
    if (rules_.size() > kMaxText) too_large(std::to_string(rules_.size()) + " bytes of GBNF");
  }
  std::string add(const std::string& kind, const std::string& body) {
    const std::string name = kind + "-" + std::to_string(next_++);
    emit(name, body);
    return name;
  }
  AddRule adder() {
    return [this](const std::string& kind, const std::string& body) { return add(kind, body); };
  }
  // An expression used more than once becomes a rule, so the text never repeats it.
  std::string named(const std::string& e) {
    const bool name = std::all_of(e.begin(), e.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
    return name ? e : add("x", e);
  }

  Expr compile(const Json& s, const std::string& ptr, int depth) {
    if (depth > kMaxDepth) throw Error("json schema: nesting deeper than " + std::to_string(kMaxDepth) + " at " + where(ptr));
    if (s.is_boolean()) return s.get<bool>() ? Expr("value") : std::nullopt;
    if (!s.is_object()) throw Error("json schema: the schema at " + where(ptr) + " is not an object or a boolean");
    for (const auto& [k, v] : s.items()) {
      const bool root_id = (k == "$id" || k == "id") && &s == &root_;  // elsewhere it would move $ref's base
      if (kAnnotations.count(k) || root_id || (k == "uniqueItems" && v == false)) continue;
      if (!kKeywords.count(k)) unsupported(k, ptr);
    }
    if (s.contains("$ref")) return ref(s, ptr);
    for (const char* kw : {"allOf", "anyOf", "oneOf"})
      if (s.contains(kw)) return combine(s, kw, ptr, depth);
    return leaf(s, ptr, depth);
  }

  // A $ref is its target's rule, compiled later (once, however many refs and cycles lead there).
  Expr ref(const Json& s, const std::string& ptr) {
    for (const auto& kv : s.items())
      if (kv.key() != "$ref" && !kAnnotations.count(kv.key())) unsupported("$ref", ptr, "next to '" + kv.key() + "'");
    const std::string target = resolve(s["$ref"], ptr);
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    const std::string name = "ref-" + std::to_string(next_++);
    refs_[target] = name;
    pending_.emplace_back(target, name);
    return name;
  }

  // The JSON pointer a "$ref" names: "#" or "#/..." (URI-escaped) in this document.
  std::string resolve(const Json& ref, const std::string& ptr) const {
    if (!ref.is_string()) malformed("$ref", ptr, "must be a string");
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') unsupported("$ref", ptr, "'" + r + "' is outside this schema");
    std::string p;
    for (size_t i = 1; i < r.size(); i++) {
      if (r[i] == '%' && i + 2 < r.size() && std::isxdigit(static_cast<unsigned char>(r[i + 1])) && std::isxdigit(static_cast<unsigned char>(r[i + 2]))) {
        p += static_cast<char>(std::stoi(r.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        p += r[i];
      }
    }
    try {
      if (root_.contains(Json::json_pointer(p))) return p;
    } catch (const nlohmann::json::exception&) {
    }
    throw Error("json schema: unresolvable $ref '" + r + "' at " + where(ptr));
  }

  const Json& target_of(const Json& s, const std::string& ptr) const { return root_.at(Json::json_pointer(resolve(s["$ref"], ptr))); }
  static bool pure_ref(const Json& s) { return s.is_object() && s.contains("$ref") && s.size() == 1; }

  // allOf folds its subschemas into one schema; anyOf / oneOf put the schema's other keywords into each branch.
  Expr combine(const Json& s, const std::string& kw, const std::string& ptr, int depth) {
    const Json& list = s[kw];
    if (!list.is_array() || list.empty()) malformed(kw, ptr, "must be a non-empty array");
    Json base = Json::object();
    for (const auto& [k, v] : s.items())
      if (k != kw && !kAnnotations.count(k) && k != "$id" && k != "id") base[k] = v;
    if (kw == "allOf") {
      std::optional<Json> m = base;
      for (size_t i = 0; i < list.size() && m; i++) m = merge(*m, list[i], child(ptr, kw) + "/" + std::to_string(i), depth);
      return m ? compile(*m, ptr, depth + 1) : std::nullopt;
    }
    std::vector<Json> branches;
    std::vector<std::string> alts;
    for (size_t i = 0; i < list.size(); i++) {
      const std::string at = child(ptr, kw) + "/" + std::to_string(i);
      const std::optional<Json> b = merge(base, list[i], at, depth);
      if (!b) continue;
      if (kw == "oneOf")
        for (const Json& other : branches)
          if (!disjoint(other, *b, at, 0)) unsupported("oneOf", ptr, "branches that may overlap");
      branches.push_back(*b);
      if (const Expr e = compile(*b, at, depth + 1)) alts.push_back(*e);
    }
    return alts.empty() ? std::nullopt : Expr(alt(alts));
  }

  // The conjunction of two schemas as one schema, where that is exact: keywords of one side only, `type`
  // intersected, `required` joined, `properties` joined (unless additionalProperties looks at them), equal
  // values. nullopt: nothing satisfies both.
  std::optional<Json> merge(const Json& a, const Json& b0, const std::string& ptr, int depth) {
    if (depth > kMaxDepth) throw Error("json schema: nesting deeper than " + std::to_string(kMaxDepth) + " at " + where(ptr));
    if (asserts_nothing(a)) return b0;  // keeps a $ref a $ref (its rule handles recursion)
    if (b0.is_boolean()) return b0.get<bool>() ? std::optional<Json>(a) : std::nullopt;
    if (!b0.is_object()) throw Error("json schema: the schema at " + where(ptr) + " is not an object or a boolean");
    if (pure_ref(b0)) return merge(a, target_of(b0, ptr), ptr, depth + 1);
    const Json& b = b0;
    const auto props = {"properties", "additionalProperties", "patternProperties"};
    if ((has_any(a, {"additionalProperties", "patternProperties"}) && has_any(b, props)) ||
        (has_any(b, {"additionalProperties", "patternProperties"}) && has_any(a, props)))
      unsupported("additionalProperties", ptr, "in a schema merged with other properties");
    if (has_any(a, {"items", "prefixItems", "additionalItems"}) && has_any(b, {"items", "prefixItems", "additionalItems"}))
      unsupported("items", ptr, "in both a schema and its subschema");
    for (const auto& group : {std::initializer_list<const char*>{"minimum", "exclusiveMinimum"}, {"maximum", "exclusiveMaximum"}})
      if (has_any(a, group) && has_any(b, group)) unsupported(*group.begin(), ptr, "in both a schema and its subschema");
    Json m = a;
    for (const auto& [k, v] : b.items()) {
      if (kAnnotations.count(k) || (k == "uniqueItems" && v == false)) continue;
      if (!kKeywords.count(k) || k == "$ref") unsupported(k, ptr, k == "$ref" ? "next to other keywords" : "");
      if (!m.contains(k)) {
        m[k] = v;
      } else if (k == "type") {
        const unsigned bits = type_bits(m[k], ptr) & type_bits(v, ptr);
        if (!bits) return std::nullopt;
        m[k] = Json::array();
        for (const auto& [bit, name] : {std::pair{kNull, "null"}, {kBool, "boolean"}, {kObject, "object"}, {kArray, "array"}, {kString, "string"}})
          if (bits & bit) m[k].push_back(name);
        if (bits & kInt) m[k].push_back(bits & kFrac ? "number" : "integer");
      } else if (k == "required" && v.is_array() && m[k].is_array()) {
        for (const Json& r : v)
          if (std::find(m[k].begin(), m[k].end(), r) == m[k].end()) m[k].push_back(r);
      } else if (k == "properties" && v.is_object() && m[k].is_object()) {
        for (const auto& [name, p] : v.items()) m[k][name] = m[k].contains(name) ? Json::object({{"allOf", Json::array({m[k][name], p})}}) : p;
      } else if (m[k] != v) {
        unsupported(k, ptr, "in both a schema and its subschema");
      }
    }
    return m;
  }

  // The types a schema's instances may have (more, never fewer), for oneOf's disjointness.
  unsigned types(const Json& s, int depth) {
    if (s.is_boolean()) return s.get<bool>() ? unsigned(kAll) : 0u;
    if (!s.is_object() || depth > kMaxDepth) return kAll;
    unsigned t = kAll;
    if (s.contains("type")) t &= type_bits(s["type"], "");
    if (s.contains("const")) t &= value_bits(s["const"]);
    if (s.contains("enum") && s["enum"].is_array()) {
      unsigned e = 0;
      for (const Json& v : s["enum"]) e |= value_bits(v);
      t &= e;
    }
    if (s.contains("$ref")) {
      const std::string target = resolve(s["$ref"], "");
      if (!ref_types_.count(target)) {
        ref_types_[target] = kAll;  // while in progress: a cycle proves nothing
        ref_types_[target] = types(root_.at(Json::json_pointer(target)), depth + 1);
      }
      t &= ref_types_[target];
    }
    for (const char* kw : {"allOf", "anyOf", "oneOf"}) {
      if (!s.contains(kw) || !s[kw].is_array()) continue;
      unsigned u = std::string(kw) == "allOf" ? unsigned(kAll) : 0u;
      for (const Json& b : s[kw]) u = std::string(kw) == "allOf" ? u & types(b, depth + 1) : u | types(b, depth + 1);
      t &= u;
    }
    return (t & (kInt | kFrac)) ? t | kInt | kFrac : t;  // 1 and 1.0 are the same number
  }

  // No instance satisfies both: disjoint types, disjoint enum / const values, or a property both require with
  // disjoint schemas (a discriminator).
  bool disjoint(const Json& a0, const Json& b0, const std::string& ptr, int depth) {
    if (depth > 4) return false;
    const Json& a = pure_ref(a0) ? target_of(a0, ptr) : a0;
    const Json& b = pure_ref(b0) ? target_of(b0, ptr) : b0;
    const unsigned common = types(a, 0) & types(b, 0);
    if (!common) return true;
    const auto values = [](const Json& s) { return !s.is_object() ? Json() : s.contains("const") ? Json::array({s["const"]}) : s.contains("enum") ? s["enum"] : Json(); };
    const Json va = values(a), vb = values(b);
    if (va.is_array() && vb.is_array())
      return std::none_of(va.begin(), va.end(), [&](const Json& v) { return std::find(vb.begin(), vb.end(), v) != vb.end(); });
    if (common != kObject || !a.contains("required") || !b.contains("required") || !a.contains("properties") || !b.contains("properties")) return false;
    for (const Json& r : a["required"]) {
      if (!r.is_string() || std::find(b["required"].begin(), b["required"].end(), r) == b["required"].end()) continue;
      const std::string k = r.get<std::string>();
      if (a["properties"].contains(k) && b["properties"].contains(k) && disjoint(a["properties"][k], b["properties"][k], ptr, depth + 1)) return true;
    }
    return false;
  }

  Expr leaf(const Json& s, const std::string& ptr, int depth) {
    const unsigned t = s.contains("type") ? type_bits(s["type"], ptr) : kAll;
    if (s.contains("enum") || s.contains("const")) return enumeration(s, t, ptr);
    if (t == kAll && asserts_nothing(s)) return "value";
    std::vector<std::string> alts;
    const auto put = [&](const Expr& e) {
      if (e) alts.push_back(*e);
    };
    if (t & kNull) put("\"null\"");
    if (t & kBool) put("( \"true\" | \"false\" )");
    if (t & kInt) put(number(s, t, ptr));
    if (t & kString) put(string(s, ptr));
    if (t & kArray) put(array(s, ptr, depth));
    if (t & kObject) put(object(s, ptr, depth));
    return alts.empty() ? std::nullopt : Expr(alt(alts));
  }

  Expr enumeration(const Json& s, unsigned t, const std::string& ptr) {
    for (const auto& kv : s.items())
      if (kv.key() != "enum" && kv.key() != "const" && kv.key() != "type" && !kAnnotations.count(kv.key()) && kv.key() != "$id" && kv.key() != "id")
        unsupported(kv.key(), ptr, "next to enum / const");
    if (s.contains("enum") && !s["enum"].is_array()) malformed("enum", ptr, "must be an array");
    Json values = s.contains("enum") ? s["enum"] : Json::array({s["const"]});
    if (s.contains("enum") && s.contains("const"))
      values = std::find(values.begin(), values.end(), s["const"]) != values.end() ? Json::array({s["const"]}) : Json::array();
    Texts texts;  // scalars (as code points), as one prefix tree
    std::vector<std::string> alts;      // arrays and objects
    size_t size = 0;
    for (const Json& v : values) {
      if (!(value_bits(v) & t)) continue;
      if (v.is_array() || v.is_object()) {
        alts.push_back(value_text(v));
        continue;
      }
      for (const std::string& text : scalar_texts(v, t)) {
        texts.push_back(code_points(text));
        if ((size += text.size()) > kMaxText / 8) too_large("an enum of " + std::to_string(values.size()) + " values");
      }
    }
    if (!texts.empty()) {
      std::sort(texts.begin(), texts.end());
      texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
      alts.push_back(prefix_tree(texts, 0, texts.size(), 0, adder()));
    }
    return alts.empty() ? std::nullopt : Expr(alt(alts));
  }

  // The canonical texts of a scalar: its dump(), an integral number also as N (integers) and N.0 (non-integers).
  static std::vector<std::string> scalar_texts(const Json& v, unsigned t) {
    if (!v.is_number()) return {v.dump()};
    const double d = v.get<double>();
    if (!v.is_number_float() || (std::floor(d) == d && std::fabs(d) < 1e15)) {
      const std::string n = v.is_number_float() ? Json(static_cast<int64_t>(d)).dump() : v.dump();
      std::vector<std::string> out;
      if (t & kInt) out.push_back(n);
      if (t & kFrac) out.push_back(n + ".0");
      return out;
    }
    return t & kFrac ? std::vector<std::string>{v.dump()} : std::vector<std::string>{};
  }

  // An array or object value (of an enum), with whitespace between its tokens and keys in its order.
  std::string value_text(const Json& v) {
    if (!v.is_array() && !v.is_object()) {
      std::vector<std::string> alts;
      for (const std::string& text : scalar_texts(v, kAll)) alts.push_back(lit(text));
      return alt(alts);
    }
    std::vector<std::string> items;
    for (const auto& [k, x] : v.items()) items.push_back((v.is_object() ? lit(Json(k).dump()) + " ws \":\" ws " : "") + value_text(x) + " ws");
    const std::string open = v.is_object() ? "\"{\"" : "\"[\"", close = v.is_object() ? "\"}\"" : "\"]\"";
    return open + " ws " + join(items, " \",\" ws ") + " " + close;
  }

  Expr number(const Json& s, unsigned t, const std::string& ptr) { return json_schema_number::numbers(s, t & kFrac, ptr, adder()); }

  Expr string(const Json& s, const std::string& ptr) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("pattern")) return pattern(s, lengths, ptr);
    if (s.contains("format")) {
      const Json& f = s["format"];
      if (!f.is_string()) malformed("format", ptr, "must be a string");
      const std::string name = f.get<std::string>();
      if (name != "date" && name != "time" && name != "date-time" && name != "uuid") unsupported("format", ptr, "format '" + name + "'");
      if (lengths) unsupported(s.contains("minLength") ? "minLength" : "maxLength", ptr, "next to format");
      if (!formats_) rules_ += kFormatRules;
      formats_ = true;
      return "\"\\\"\" f-" + name + " \"\\\"\"";
    }
    if (!lengths) return Expr("string");
    const int64_t lo = count_of(s, "minLength", 0, ptr), hi = count_of(s, "maxLength", -1, ptr);
    if (hi >= 0 && lo > hi) return std::nullopt;
    if (hi == 0) return Expr("\"\\\"\\\"\"");
    return "\"\\\"\" char" + rep(lo, hi, lo > kMaxCount ? "minLength" : "maxLength", ptr) + " \"\\\"\"";
  }

  // A pattern's strings, alone: next to a length or a format it would need the two languages' intersection.
  Expr pattern(const Json& s, bool lengths, const std::string& ptr) {
    if (!s["pattern"].is_string()) malformed("pattern", ptr, "must be a string");
    if (lengths || s.contains("format")) unsupported("pattern", ptr, std::string("next to ") + (lengths ? "minLength / maxLength" : "format"));
    try {
      const Expr e = regex_to_gbnf(s["pattern"].get<std::string>(), adder());
      return e ? Expr("\"\\\"\" " + *e + " \"\\\"\"") : std::nullopt;
    } catch (const RegexUnsupported& e) {
      unsupported("pattern", ptr, e.what());
    } catch (const RegexInvalid& e) {
      malformed("pattern", ptr, std::string("is not a valid regular expression (") + e.what() + ")");
    }
  }

  Expr array(const Json& s, const std::string& ptr, int depth) {
    if (!has_any(s, {"items", "prefixItems", "additionalItems", "minItems", "maxItems"})) return Expr("array");
    std::vector<Expr> prefix;
    Expr rest = "value";
    const auto tuple = [&](const char* kw) {
      if (!s[kw].is_array()) malformed(kw, ptr, "must be an array");
      for (size_t i = 0; i < s[kw].size(); i++) prefix.push_back(compile(s[kw][i], child(ptr, kw) + "/" + std::to_string(i), depth + 1));
    };
    if (s.contains("prefixItems")) {
      if (s.contains("items") && s["items"].is_array()) malformed("items", ptr, "must be a schema next to prefixItems");
      tuple("prefixItems");
      if (s.contains("items")) rest = compile(s["items"], child(ptr, "items"), depth + 1);
    } else if (s.contains("items") && s["items"].is_array()) {  // draft 4-7: a tuple, then additionalItems
      tuple("items");
      if (s.contains("additionalItems")) rest = compile(s["additionalItems"], child(ptr, "additionalItems"), depth + 1);
    } else if (s.contains("items")) {
      rest = compile(s["items"], child(ptr, "items"), depth + 1);
    }
    int64_t lo = count_of(s, "minItems", 0, ptr), hi = count_of(s, "maxItems", -1, ptr);
    const auto cap = [&](int64_t n) { hi = hi < 0 ? n : std::min(hi, n); };
    for (size_t i = 0; i < prefix.size(); i++)
      if (!prefix[i]) cap(int64_t(i));
    if (!rest) cap(int64_t(prefix.size()));
    if (hi >= 0 && lo > hi) return std::nullopt;
    if (hi == 0) return Expr("\"[\" ws \"]\"");
    const std::string r = rest ? named(*rest) : "";
    const int64_t k = int64_t(prefix.size()), start = std::max<int64_t>(k, 1);
    // tail: what may follow the first i elements, built from the end.
    std::string tail;
    if (rest && (hi < 0 || start < hi)) {
      const int64_t m = std::max<int64_t>(lo - start, 0), n = hi < 0 ? -1 : hi - start;
      tail = "( \",\" ws " + r + " ws )" + rep(m, n, lo - start > kMaxCount ? "minItems" : "maxItems", ptr);
    }
    for (int64_t i = start - 1; i >= 1; i--) {
      if (hi >= 0 && i >= hi) continue;
      const std::string more = "\",\" ws " + *prefix[size_t(i)] + " ws " + tail;
      tail = add("arr", i >= lo ? more + " | " : more);
    }
    const std::string first = (k > 0 ? *prefix[0] : r) + " ws " + tail;
    return "\"[\" ws " + (lo == 0 ? "( " + first + " )?" : first) + " \"]\"";
  }

  Expr object(const Json& s, const std::string& ptr, int depth) {
    if (!has_any(s, {"properties", "required", "additionalProperties", "minProperties", "maxProperties"})) return Expr("object");
    struct Prop {
      std::string name;
      Expr value;
      bool required;
    };
    std::vector<Prop> props;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) malformed("properties", ptr, "must be an object");
      for (const auto& [k, v] : s["properties"].items()) props.push_back({k, compile(v, child(child(ptr, "properties"), k), depth + 1), false});
    }
    const Expr extra = s.contains("additionalProperties") ? compile(s["additionalProperties"], child(ptr, "additionalProperties"), depth + 1) : Expr("value");
    if (s.contains("required")) {
      if (!s["required"].is_array()) malformed("required", ptr, "must be an array of strings");
      for (const Json& r : s["required"]) {
        if (!r.is_string()) malformed("required", ptr, "must be an array of strings");
        const auto p = std::find_if(props.begin(), props.end(), [&](const Prop& q) { return q.name == r.get<std::string>(); });
        if (p != props.end()) p->required = true;
        else props.push_back({r.get<std::string>(), extra, true});
      }
    }
    std::vector<std::string> names;
    std::vector<Prop> kept;  // a property whose schema is false may not appear (nor, if required, the object)
    for (const Prop& p : props) {
      names.push_back(p.name);
      if (!p.value && p.required) return std::nullopt;
      if (p.value) kept.push_back(p);
    }
    const int64_t min = count_of(s, "minProperties", 0, ptr), max = count_of(s, "maxProperties", -1, ptr);
    // Other keys are not kept distinct: a count that needs two of them could be met by one written twice.
    const auto required = std::count_if(kept.begin(), kept.end(), [](const Prop& p) { return p.required; });
    if (extra && min > required + 1) unsupported("minProperties", ptr, "needs two or more keys beyond the required ones, which may repeat");
    std::vector<json_schema_object::Member> members;
    for (const Prop& p : kept) members.push_back({lit(Json(p.name).dump()) + " ws \":\" ws " + *p.value + " ws", p.required});
    std::optional<std::string> member;  // another key, where allowed
    if (extra) member = add("member", key_except(names) + " ws \":\" ws " + *extra + " ws");
    const Expr inside = json_schema_object::members(members, member, min, max, ptr, adder());
    return inside ? Expr("\"{\" ws " + (inside->empty() ? "" : *inside + " ") + "\"}\"") : std::nullopt;
  }

  // A key other than `names`: canonical text (see the header), as a tree over the names' code points where
  // every step may also leave the names behind, or end the key where no name ends.
  std::string key_except(const std::vector<std::string>& names) {
    if (names.empty()) return "string";
    if (!keys_) {
      std::vector<std::string> esc;
      for (const std::string& c : specials()) esc.push_back(lit(canonical(c)));
      emit("cesc", join(esc, " | "));
      emit("crest", "( [^\"\\\\\\x00-\\x1F\\uD800-\\uDFFF] | cesc )* \"\\\"\"");
      keys_ = true;
    }
    Texts t;
    for (const std::string& n : names) {
      t.push_back(code_points(n));
      if (t.back().size() > kMaxName) too_large("a property name over " + std::to_string(kMaxName) + " characters");
    }
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    return "\"\\\"\" " + key_node(t, 0, t.size(), 0, adder());
  }
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, JsonWhitespace ws) { return Converter(schema, ws).run(); }

std::string json_schema_to_gbnf(const nlohmann::json& schema, JsonWhitespace ws) {
  return json_schema_to_gbnf(nlohmann::ordered_json(schema), ws);
}

std::string json_any_gbnf(JsonWhitespace ws) { return std::string("root ::= object\n") + ws_rule(ws) + kCommonRules; }

}  // namespace jf
