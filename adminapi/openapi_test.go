package adminapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The OpenAPI document is kept true two ways: TestOpenAPIRoutes compares
// its operations with the route table, and every response of every test
// (env.raw) is checked against the schema it documents.

// spec is openapi.json, decoded once.
var spec = func() map[string]any {
	var m map[string]any
	if err := json.Unmarshal(openAPIDoc, &m); err != nil {
		panic("openapi.json: " + err.Error())
	}
	return m
}()

// routeTable lists the route table's patterns as "METHOD /path" in the
// document's form ("{$}" dropped).
func routeTable() []string {
	var out []string
	(&API{}).routes(func(pattern string, _ func(http.ResponseWriter, *http.Request)) {
		out = append(out, strings.TrimSuffix(pattern, "{$}"))
	})
	sort.Strings(out)
	return out
}

func documented() []string {
	var out []string
	for p, item := range spec["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			if m != "parameters" {
				out = append(out, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPIRoutes(t *testing.T) {
	if v := spec["openapi"]; v != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", v)
	}
	routes, docs := routeTable(), documented()
	for _, r := range routes {
		if !slices.Contains(docs, r) {
			t.Errorf("route %q is not in openapi.json", r)
		}
	}
	for _, d := range docs {
		if !slices.Contains(routes, d) {
			t.Errorf("openapi.json documents %q, which is not a route", d)
		}
	}
	// Every operation is described, and every $ref resolves.
	for _, d := range docs {
		method, path, _ := strings.Cut(d, " ")
		op := spec["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
		if op["summary"] == nil || op["operationId"] == nil || op["description"] == nil {
			t.Errorf("%s: no summary, description or operationId", d)
		}
		for code, r := range op["responses"].(map[string]any) {
			if resolve(r.(map[string]any))["description"] == nil {
				t.Errorf("%s %s: no description", d, code)
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if lookupRef(ref) == nil {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(spec)
}

// lookupRef finds "#/a/b/c" in the document.
func lookupRef(ref string) map[string]any {
	var cur any = spec
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

func resolve(m map[string]any) map[string]any {
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m = lookupRef(ref)
	}
	return m
}

// operation finds the documented operation a request went to, by
// matching its escaped path segment by segment against the templates.
func operation(method, path string) (map[string]any, bool) {
	if to, ok := collections[path]; ok {
		path = to
	}
	segs := strings.Split(path, "/")
	for tmpl, item := range spec["paths"].(map[string]any) {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		match := true
		for i := range ts {
			if strings.HasPrefix(ts[i], "{") {
				match = match && segs[i] != ""
			} else {
				match = match && ts[i] == segs[i]
			}
		}
		if match {
			op, ok := item.(map[string]any)[strings.ToLower(method)].(map[string]any)
			return op, ok
		}
	}
	return nil, false
}

// checkResponse checks an answer against openapi.json: its status is
// documented for the operation and its body fits the schema. Answers
// to unknown paths and methods must be an Error.
func checkResponse(t testing.TB, method, path string, r resp) {
	t.Helper()
	var schema map[string]any
	op, ok := operation(method, path)
	if !ok {
		if r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %d for an undocumented operation, want 404 or 405", method, path, r.status)
		}
		schema = lookupRef("#/components/schemas/Error")
	} else {
		res, ok := op["responses"].(map[string]any)[strconv.Itoa(r.status)].(map[string]any)
		if !ok {
			t.Errorf("%s %s = %d %s: status not documented", method, path, r.status, r.body)
			return
		}
		res = resolve(res)
		content, ok := res["content"].(map[string]any)
		if !ok {
			return
		}
		js, ok := content["application/json"].(map[string]any)
		if !ok {
			// A document that is not JSON (the mail clients' XML): its
			// media type must be one documented.
			ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
			if _, ok := content[ct]; !ok {
				t.Errorf("%s %s = %d with Content-Type %q, not documented", method, path, r.status, ct)
			}
			return
		}
		schema = js["schema"].(map[string]any)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Errorf("%s %s = %d: body is not JSON: %q", method, path, r.status, r.body)
		return
	}
	if err := validate(schema, v, "body"); err != nil {
		t.Errorf("%s %s = %d %s: %v", method, path, r.status, r.body, err)
	}
}

// validate checks v against the subset of JSON Schema openapi.json uses:
// $ref, type (a name or a list, for null), properties, required, items,
// enum, minimum, maximum, pattern. An object with properties is closed:
// a property the document does not name is an error, so nothing (a
// password hash, a partner id) leaks unnoticed.
func validate(schema map[string]any, v any, at string) error {
	schema = resolve(schema)
	if types, ok := schemaTypes(schema); ok {
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			return fmt.Errorf("%s: %s, want %v", at, jsonType(v), types)
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v not in %v", at, v, enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		req, _ := schema["required"].([]any)
		for _, req := range req {
			if _, ok := v[req.(string)]; !ok {
				return fmt.Errorf("%s: required %q missing", at, req)
			}
		}
		if props == nil {
			return nil
		}
		for k, x := range v {
			ps, ok := props[k].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: property %q not documented", at, k)
			}
			if err := validate(ps, x, at+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				if err := validate(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case float64:
		if lo, ok := schema["minimum"].(float64); ok && v < lo {
			return fmt.Errorf("%s: %v below minimum %v", at, v, lo)
		}
		if hi, ok := schema["maximum"].(float64); ok && v > hi {
			return fmt.Errorf("%s: %v above maximum %v", at, v, hi)
		}
	case string:
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			return fmt.Errorf("%s: %q does not match %s", at, v, p)
		}
	}
	return nil
}

func schemaTypes(schema map[string]any) ([]string, bool) {
	switch t := schema["type"].(type) {
	case string:
		return []string{t}, true
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out, true
	}
	return nil, false
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func TestValidate(t *testing.T) {
	s := map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{
		"a": map[string]any{"type": "integer", "minimum": 1.0},
		"b": map[string]any{"type": []any{"string", "null"}},
		"c": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"x"}}},
	}}
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"good", `{"a":1,"b":null,"c":["x"]}`, true},
		{"string or null", `{"a":1,"b":"s"}`, true},
		{"missing required", `{"b":"s"}`, false},
		{"wrong type", `{"a":"1"}`, false},
		{"not integer", `{"a":1.5}`, false},
		{"below minimum", `{"a":0}`, false},
		{"undocumented property", `{"a":1,"password_hash":"x"}`, false},
		{"enum", `{"a":1,"c":["y"]}`, false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			json.Unmarshal([]byte(tt.in), &v)
			if err := validate(s, v, "body"); (err == nil) != tt.ok {
				t.Errorf("validate(%s) = %v, want ok=%v", tt.in, err, tt.ok)
			}
		})
	}
}

// TestAPIDocRoutes keeps docs/api.md true: every route is named there as
// `METHOD /path`, and it names no route that does not exist.
func TestAPIDocRoutes(t *testing.T) {
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	routes := routeTable()
	for _, r := range routes {
		if !strings.Contains(string(doc), "`"+r+"`") {
			t.Errorf("docs/api.md does not describe %s", r)
		}
	}
	for _, m := range regexp.MustCompile("`((?:GET|POST|PUT|DELETE) /[^`]*)`").FindAllStringSubmatch(string(doc), -1) {
		if !slices.Contains(routes, m[1]) {
			t.Errorf("docs/api.md describes %s, which is not a route", m[1])
		}
	}
}
