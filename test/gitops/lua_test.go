package gitops

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// argoHealthStatuses are the statuses Argo CD accepts from a health script.
var argoHealthStatuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

// luaInterpreter returns the path of lua5.4. Missing, it fails rather than skips: a skipped
// test would leave the health checks unrun in `make test`, which installs it (make lua).
func luaInterpreter(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("lua5.4")
	if err != nil {
		t.Fatal("lua5.4 is not on PATH: run hack/install-lua.sh (make lua) to install Debian's lua5.4")
	}
	return path
}

// TestArgoCDHealthChecks runs every health.lua under config/gitops/argocd on each fixture
// its health_test.yaml lists, in Lua 5.4, and compares status and message.
func TestArgoCDHealthChecks(t *testing.T) {
	lua := luaInterpreter(t)
	for _, c := range healthChecks(t) {
		t.Run(c.Kind, func(t *testing.T) {
			for _, tc := range c.Tests.Tests {
				t.Run(caseName(tc.InputPath, tc.HealthStatus.Status), func(t *testing.T) {
					got, err := runHealthScript(lua, c.Script, c.object(t, tc.InputPath))
					if err != nil {
						t.Fatal(err)
					}
					if got != tc.HealthStatus {
						t.Errorf("health.lua on %s:\n got: %s: %q\nwant: %s: %q",
							tc.InputPath, got.Status, got.Message, tc.HealthStatus.Status, tc.HealthStatus.Message)
					}
				})
			}
		})
	}
}

// statusAssignment finds the lines of a health script that decide a status.
const statusAssignment = `hs.status = "`

// TestEveryStatusTheScriptsReturnIsPinnedByAFixture changes, one at a time, each status a
// health script can return to another, and expects some fixture to notice: a branch no
// fixture reaches could return anything without a test failing.
func TestEveryStatusTheScriptsReturnIsPinnedByAFixture(t *testing.T) {
	lua := luaInterpreter(t)
	for _, c := range healthChecks(t) {
		lines := strings.Split(c.Script, "\n")
		mutated := 0
		for i, line := range lines {
			before, rest, found := strings.Cut(line, statusAssignment)
			if !found {
				continue
			}
			status, after, _ := strings.Cut(rest, `"`)
			other := "Healthy"
			if status == "Healthy" {
				other = "Degraded"
			}
			mutant := slices.Clone(lines)
			mutant[i] = before + statusAssignment + other + `"` + after
			mutated++
			t.Run(fmt.Sprintf("%s line %d %s to %s", c.Kind, i+1, status, other), func(t *testing.T) {
				script := strings.Join(mutant, "\n")
				for _, tc := range c.Tests.Tests {
					got, err := runHealthScript(lua, script, c.object(t, tc.InputPath))
					if err != nil || got != tc.HealthStatus {
						return // noticed
					}
				}
				t.Errorf("no fixture of %s notices line %d returning %s instead of %s: add one that reaches it",
					c.Kind, i+1, other, status)
			})
		}
		if mutated == 0 {
			t.Fatalf("%s/%s/health.lua has no line setting %s...: the mutations found nothing to change",
				c.Group, c.Kind, statusAssignment)
		}
	}
}

// runHealthScript runs script on obj as Argo CD does: obj is a global, the script's last
// statement returns the health table, and only the base and table libraries are open
// (Argo CD runs scripts without the string, math, io and debug libraries, so strings have
// no methods either). Argo CD's interpreter is gopher-lua, a Lua 5.1: the scripts keep to
// what 5.1 has (no goto, integer division or bitwise operators, no _ENV of their own), so
// that running here stands for running there; gopher-lua itself is not run.
func runHealthScript(lua, script string, obj map[string]any) (health, error) {
	var prog strings.Builder
	prog.WriteString("local obj = ")
	if err := writeLuaValue(&prog, obj); err != nil {
		return health{}, err
	}
	prog.WriteString(`
local sandbox = {
  obj = obj, table = table,
  assert = assert, error = error, getmetatable = getmetatable, ipairs = ipairs, next = next,
  pairs = pairs, pcall = pcall, rawequal = rawequal, rawget = rawget, rawset = rawset,
  select = select, setmetatable = setmetatable, tonumber = tonumber, tostring = tostring,
  type = type, xpcall = xpcall,
}
local write = io.write
debug.setmetatable("", nil)
local function health(_ENV)
`)
	prog.WriteString(script)
	prog.WriteString(`
end
local hs = health(sandbox)
if type(hs) ~= "table" then
  error("health.lua returned a " .. type(hs) .. ", not a table")
end
local message = hs.message
if message == nil then
  message = ""
end
write(tostring(hs.status), "\n", tostring(message), "\n")
`)
	out, err := runLua(lua, prog.String())
	if err != nil {
		return health{}, err
	}
	status, message, _ := strings.Cut(strings.TrimSuffix(out, "\n"), "\n")
	if !slices.Contains(argoHealthStatuses, status) {
		return health{}, fmt.Errorf("health.lua returned status %q; Argo CD accepts %v", status, argoHealthStatuses)
	}
	return health{Status: status, Message: message}, nil
}

// runLua runs a Lua program given on stdin and returns what it wrote.
func runLua(lua, program string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, lua, "-")
	cmd.Stdin = strings.NewReader(program)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("lua5.4: %w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// writeLuaValue writes v, a value of unstructured content (maps, lists, strings, int64,
// float64, bools, nil), as a Lua expression. Map keys are sorted, so the program is the same
// on every run; a null map value is left out, as a nil field is in Lua, and a null list
// element stays in place as nil, as Argo CD decodes it.
func writeLuaValue(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(luaString(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case int:
		b.WriteString(strconv.Itoa(v))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%v has no Lua literal", v)
		}
		// 'g' may print an integral float without a point; Argo CD's Lua has a single
		// number type, so it reads the same there.
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k, e := range v {
			if e != nil {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("[" + luaString(k) + "] = ")
			if err := writeLuaValue(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteString("}")
	case []any:
		b.WriteString("{")
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeLuaValue(b, e); err != nil {
				return err
			}
		}
		b.WriteString("}")
	default:
		return fmt.Errorf("no Lua literal for %T", v)
	}
	return nil
}

// luaString quotes s as a Lua string literal. Quotes, backslashes and control bytes are
// escaped; control bytes as three-digit decimal escapes, which a following digit cannot
// extend. Other bytes, UTF-8 included, stand as they are: Lua strings are bytes.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\%03d`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestWriteLuaValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"a map is a table with its keys sorted and quoted", map[string]any{"b": int64(1), "a.b/c": "x"},
			`{["a.b/c"] = "x", ["b"] = 1}`},
		{"a null map value is left out", map[string]any{"a": nil, "b": true}, `{["b"] = true}`},
		{"a list keeps its order and a null element's place", []any{"x", nil, false}, `{"x", nil, false}`},
		{"an empty map and an empty list are empty tables", map[string]any{"m": map[string]any{}, "l": []any{}},
			`{["l"] = {}, ["m"] = {}}`},
		{"numbers keep their value", []any{int64(-9007199254740993), 0.8, float64(3), 1e21},
			`{-9007199254740993, 0.8, 3, 1e+21}`},
		{"quotes, backslashes and control bytes are escaped", "a\"b\\c\nd\re\x00" + "1\x7f",
			`"a\"b\\c\nd\013e\0001\127"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeLuaValue(&b, tc.in); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got  %s\nwant %s", b.String(), tc.want)
			}
		})
	}
	t.Run("a value unstructured content cannot hold is refused", func(t *testing.T) {
		var b strings.Builder
		if err := writeLuaValue(&b, struct{}{}); err == nil {
			t.Error("no error for a struct")
		}
		if err := writeLuaValue(&b, math.NaN()); err == nil {
			t.Error("no error for NaN")
		}
	})
}

// TestLuaStringsRoundTrip has lua5.4 read back what luaString wrote, byte for byte: the
// escapes above are only right if the interpreter agrees.
func TestLuaStringsRoundTrip(t *testing.T) {
	lua := luaInterpreter(t)
	inputs := []string{
		"", `plain`, `"double" and 'single' quotes`, `back\slash \n not a newline`,
		"new\nline\r\ncarriage", "tab\tNUL\x00digit after escape\x017", "DEL\x7f",
		"UTF-8: µs Grüße 日本", "`[0-9{6}`", "]] and [[ and [==[", "\xff\xfe not UTF-8",
	}
	// Each string comes back length-prefixed, "<bytes>:<string>", since any separator
	// could be in one.
	var prog strings.Builder
	for _, in := range inputs {
		prog.WriteString("do local s = " + luaString(in) + "; io.write(#s, \":\", s) end\n")
	}
	out, err := runLua(lua, prog.String())
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range inputs {
		n, rest, ok := strings.Cut(out, ":")
		size, err := strconv.Atoi(n)
		if !ok || err != nil || size > len(rest) {
			t.Fatalf("string %d: lua5.4 wrote %q", i, out)
		}
		if got := rest[:size]; got != in {
			t.Errorf("%q came back as %q", in, got)
		}
		out = rest[size:]
	}
	if out != "" {
		t.Errorf("lua5.4 wrote more than the strings: %q", out)
	}
}
