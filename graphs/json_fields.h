// graphs/json_fields.h — a JSON document declared once: each object's fields, with their types, their meaning
// and where each comes from in the C++ value. The writer (Object::write) and the JSON schema (Object::schema) are both
// read off that one description, so a field cannot be written without being in the schema or the other way round.
//
//   Object<Metrics> describe(Tag<Metrics>) {
//     using F = Fields<Metrics>;
//     return Object<Metrics>("metrics", {F::of("numel", &Metrics::numel).at_least(0),
//                                        F::of("rmse", &Metrics::rmse, "sqrt(mean((x - ref)^2))")});
//   }
//
// A field's schema type follows from its C++ type (type_of): std::string, bool, integers, double (a `number`: JSON has
// no NaN, so non-finite values are the strings 'NaN', 'Infinity', '-Infinity'), std::vector, std::optional (null when
// empty) and any struct with a describe(Tag<T>). Enumerations and computed values say their type themselves.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace pt2diff::json_fields {

using nlohmann::json;

/// A field's type as a JSON-schema fragment ({"type": "string"}, {"$ref": "#/$defs/metrics"}, ...).
struct Type {
  json schema;

  /// The same type or null ("type": [T, "null"], or a oneOf where the type is a reference or an enumeration).
  Type or_null() const {
    json s = schema;
    if (s.contains("type") && s["type"].is_string() && !s.contains("items") && !s.contains("properties")) {
      s["type"] = json::array({s["type"], "null"});
      return {s};
    }
    if (s.contains("enum")) {
      json values = json::array({nullptr});
      for (const json& v : s["enum"]) values.push_back(v);
      return {{{"enum", values}}};
    }
    return {{{"oneOf", json::array({json{{"type", "null"}}, s})}}};
  }
};

inline Type string_type() { return {{{"type", "string"}}}; }
inline Type boolean_type() { return {{{"type", "boolean"}}}; }
inline Type integer_type() { return {{{"type", "integer"}}}; }
/// A plain JSON number: for values that are always finite (times, multipliers).
inline Type finite_type() { return {{{"type", "number"}}}; }
/// A number that may be non-finite, written by number() ($defs/number).
inline Type number_type() { return {{{"$ref", "#/$defs/number"}}}; }
inline Type array_type(const Type& items) { return {{{"type", "array"}, {"items", items.schema}}}; }
inline Type ref_type(const std::string& def) { return {{{"$ref", "#/$defs/" + def}}}; }
inline Type one_of(std::initializer_list<const char*> names) {
  json values = json::array();
  for (const char* n : names) values.push_back(n);
  return {{{"enum", values}}};
}
/// The names an enumeration's values print as, from the function that prints them.
template <class E, class Name>
Type names_of(Name name, std::initializer_list<E> values) {
  json out = json::array();
  for (E v : values) out.push_back(name(v));
  return {{{"enum", out}}};
}

/// The names of an enumeration whose values run from 0 to `last`.
template <class E, class Name>
Type names_upto(Name name, E last) {
  json out = json::array();
  for (int v = 0; v <= static_cast<int>(last); ++v) out.push_back(name(static_cast<E>(v)));
  return {{{"enum", out}}};
}

/// JSON has no infinities or NaN: they are written as strings, like torch.export's own JSON.
inline json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

template <class T>
class Object;

/// Names a described type for overloading: a struct written as an object has `Object<T> describe(Tag<T>)`, found
/// by argument-dependent lookup (declared in json_fields' namespace or the type's own).
template <class T>
struct Tag {};

/// The one Object of a described type, made by its describe() on first use.
template <class T>
const Object<T>& object_of();

/// The schemas of the objects with a $defs name, by that name: filled as each Object is made, read by
/// document_schema() for the references a document holds.
inline std::map<std::string, std::function<json()>>& named_defs() {
  static std::map<std::string, std::function<json()>> defs;
  return defs;
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
/// A list of (name, value) pairs, written as a JSON object keyed by name.
template <class T>
struct IsNamedList : std::false_type {};
template <class V>
struct IsNamedList<std::vector<std::pair<std::string, V>>> : std::true_type {};
template <class T>
struct IsMap : std::false_type {};
template <class V>
struct IsMap<std::map<std::string, V>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

/// The schema type of a C++ value.
template <class M>
Type type_of() {
  if constexpr (std::is_same_v<M, std::string>) return string_type();
  else if constexpr (std::is_same_v<M, bool>) return boolean_type();
  else if constexpr (std::is_integral_v<M> && std::is_unsigned_v<M>) return {{{"type", "integer"}, {"minimum", 0}}};
  else if constexpr (std::is_integral_v<M>) return integer_type();
  else if constexpr (std::is_floating_point_v<M>) return number_type();
  else if constexpr (IsNamedList<M>::value || IsMap<M>::value) {
    using V = typename M::value_type::second_type;  // a map's value_type is a pair too
    return {{{"type", "object"}, {"additionalProperties", type_of<V>().schema}}};
  } else if constexpr (IsVector<M>::value) return array_type(type_of<typename M::value_type>());
  else if constexpr (IsOptional<M>::value) return type_of<typename M::value_type>().or_null();
  else if constexpr (std::is_same_v<M, json>) return Type{json::object()};
  else return object_of<M>().type();
}

/// A C++ value as JSON, as type_of<M>() describes it.
template <class M>
json write_value(const M& v) {
  if constexpr (std::is_floating_point_v<M>) return number(v);
  else if constexpr (std::is_same_v<M, std::string> || std::is_same_v<M, bool> || std::is_integral_v<M> ||
                     std::is_same_v<M, json>)
    return v;
  else if constexpr (IsNamedList<M>::value || IsMap<M>::value) {
    json out = json::object();
    for (const auto& [name, value] : v) out[name] = write_value(value);
    return out;
  } else if constexpr (IsVector<M>::value) {
    json out = json::array();
    for (const auto& e : v) out.push_back(write_value(e));
    return out;
  } else if constexpr (IsOptional<M>::value) {
    return v ? write_value(*v) : json(nullptr);
  } else {
    return object_of<M>().write(v);
  }
}

/// One field of an object of type T: its name, its type, what it means, how it is read from a T, and (for a field
/// written only sometimes) when it is written. A field without a condition is required by the schema.
template <class T>
struct Field {
  std::string name;
  Type type;
  std::string description;
  std::function<json(const T&)> write;
  std::function<bool(const T&)> when;

  Field at_least(int64_t minimum) && {
    type.schema["minimum"] = minimum;
    return std::move(*this);
  }
  Field typed(Type t) && {
    type = std::move(t);
    return std::move(*this);
  }
  Field only_when(std::function<bool(const T&)> condition) && {
    when = std::move(condition);
    return std::move(*this);
  }
};

/// The field makers for objects of type T, so that a description reads one row per field.
template <class T>
struct Fields {
  /// A member, typed by its C++ type.
  template <class M>
  static Field<T> of(std::string name, M T::*member, std::string description = {}) {
    return {std::move(name), type_of<M>(), std::move(description), [member](const T& v) { return write_value(v.*member); }, {}};
  }
  /// A member with the type given (an enumeration's names, a number that is always finite).
  template <class M>
  static Field<T> of(std::string name, M T::*member, Type type, std::string description = {}) {
    Field<T> f = of(std::move(name), member, std::move(description));
    f.type = std::move(type);
    return f;
  }
  /// A member of a part of the T, where the T pairs that part with more (a kernel search with its kernel's code).
  template <class Part, class M>
  static Field<T> of(std::string name, const Part& (*part)(const T&), M Part::*member, std::string description = {}) {
    return {std::move(name), type_of<M>(), std::move(description),
            [part, member](const T& v) { return write_value(part(v).*member); }, {}};
  }
  /// A member that holds a negative number for "none": null then, else the number.
  template <class M>
  static Field<T> null_if_negative(std::string name, M T::*member, std::string description = {}) {
    return computed(
        std::move(name), [member](const T& v) { return v.*member < 0 ? std::optional<M>() : std::optional<M>(v.*member); },
        std::move(description));
  }
  /// A value computed from the T, typed by what `get` returns.
  template <class Get>
  static Field<T> computed(std::string name, Get get, std::string description = {}) {
    using M = std::decay_t<std::invoke_result_t<Get, const T&>>;
    return {std::move(name), type_of<M>(), std::move(description), [get](const T& v) { return write_value(get(v)); }, {}};
  }
  /// A value computed from the T, with the type given.
  template <class Get>
  static Field<T> computed(std::string name, Get get, Type type, std::string description = {}) {
    Field<T> f = computed(std::move(name), get, std::move(description));
    f.type = std::move(type);
    return f;
  }
};

/// An object's fields, in the order the schema lists them (the writer's keys come out sorted, as nlohmann::json
/// sorts them). `def`: its name in the schema's $defs (referenced there), or empty to be written inline.
template <class T>
class Object {
 public:
  Object(std::string def, std::vector<Field<T>> fields, std::string description = {})
      : def_(std::move(def)), fields_(std::move(fields)), description_(std::move(description)) {
    if (!def_.empty()) named_defs()[def_] = [this] { return schema(); };
  }
  Object(const Object&) = delete;  // named_defs() keeps a pointer to it: an Object lives in a function's static

  json write(const T& v) const {
    json out = json::object();
    for (const Field<T>& f : fields_)
      if (!f.when || f.when(v)) out[f.name] = f.write(v);
    return out;
  }

  /// The object's own schema: its properties, the fields written always as required, nothing else allowed.
  json schema() const {
    json properties = json::object(), required = json::array();
    for (const Field<T>& f : fields_) {
      json p = f.type.schema;
      if (!f.description.empty()) p["description"] = f.description;
      properties[f.name] = std::move(p);
      if (!f.when) required.push_back(f.name);
    }
    json s = {{"type", "object"}, {"additionalProperties", false}, {"required", required}, {"properties", properties}};
    if (!description_.empty()) s["description"] = description_;
    return s;
  }

  /// How a field of this type is typed: a reference to its $defs entry, or its schema inline.
  Type type() const { return def_.empty() ? Type{schema()} : ref_type(def_); }

  const std::string& def() const { return def_; }
  const std::vector<Field<T>>& fields() const { return fields_; }

 private:
  std::string def_;
  std::vector<Field<T>> fields_;
  std::string description_;
};

template <class T>
const Object<T>& object_of() {
  static const Object<T> object = describe(Tag<T>{});  // made in place: the $defs registry keeps its address
  return object;
}

/// A whole document's schema: `top`'s, with the $defs its references name (transitively), `number` among them.
template <class T>
json document_schema(const std::string& title, const Object<T>& top) {
  json defs = json::object();
  defs["number"] = {{"description", "a finite number, or 'Infinity' / '-Infinity' / 'NaN' (JSON has no non-finite numbers)"},
                    {"oneOf", json::array({json{{"type", "number"}}, json{{"enum", json::array({"Infinity", "-Infinity", "NaN"})}}})}};
  std::function<void(const json&)> collect = [&](const json& node) {
    if (node.is_object()) {
      if (auto ref = node.find("$ref"); ref != node.end() && ref->is_string()) {
        const std::string name = ref->get<std::string>().substr(std::string("#/$defs/").size());
        if (!defs.contains(name)) {
          defs[name] = named_defs().at(name)();
          collect(defs[name]);
        }
      }
      for (const auto& [key, value] : node.items()) collect(value);
    } else if (node.is_array()) {
      for (const json& value : node) collect(value);
    }
  };
  json out = top.schema();
  collect(out);
  out["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  out["title"] = title;
  out["$defs"] = defs;
  return out;
}

}  // namespace pt2diff::json_fields
