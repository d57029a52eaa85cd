// Command secretsgen builds the vendor-format corpus of issue 42
// (testdata/secrets_vendor_corpus.jsonl.gz) from the detector definitions of an open-source
// secret scanner, and the ordinary-text corpus (testdata/secrets_ordinary.txt.gz) from logs
// and documentation on a Debian machine with a Go toolchain.
//
//	go mod download -json github.com/trufflesecurity/trufflehog/v3@v3.63.0   # prints Dir
//	go run ./runtime/classify/builtin/testdata/secretsgen -trufflehog <Dir> -out runtime/classify/builtin/testdata
//
// For every detector package of the scanner (one vendor family per directory, a trailing
// "v2" folded into its family) it reads the package-level regular expressions, keeps those
// whose variable names a secret (keyPat, secretPat, tokenPat, …; not idPat, domainPat,
// emailPat, urlPat, …), and generates values from the expression's first capture group: a
// random instance of it, checked to match. Those values are evaluation data only: the
// detectors of this package are written from vendors' documentation.
//
// A value is "distinctive" when its capture group holds a literal of three or more
// characters (a vendor prefix such as "shpat_", a host, a marker such as ".atlasv1.").
//
// Every family is assigned to the tuning or the held-out split by the first byte of
// SHA-256("guardrail-issue42:" + family): held-out when it is below 77 (30 %). The split was
// fixed here, before any detector of issue 42 was written.
//
// Per family and value it writes positives (the value in contexts: env files, JSON, YAML,
// code, headers, prose) and near misses generated mechanically from the expression: a
// variable run one character short or long, a character outside the run's alphabet, the
// literal one character off, a GitHub or npm token whose checksum is wrong, and the vendor
// keyword followed by text that is not a secret. A near miss is kept only when it no longer
// matches the capture group.
//
// An unescaped '.' in a capture group is generated as a dot.
//
// Values are stored XOR 0x5A and hex-encoded, so that no credential-shaped string is in the
// repository (and no push protection is tripped by it).
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/crc32"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Record is one line of the corpus.
type Record struct {
	Family      string `json:"family"`
	Split       string `json:"split"`       // tuning or heldout
	Distinctive bool   `json:"distinctive"` // the format has a literal prefix, host or marker
	Kind        string `json:"kind"`        // pos, or the near-miss type
	Source      string `json:"source"`      // module@version path:variable
	Context     string `json:"ctx"`         // the text, with %s where the value goes
	Value       string `json:"v"`           // the value, XOR 0x5A, hex
}

// HeldOut reports whether a family is in the held-out split.
func HeldOut(family string) bool {
	h := sha256.Sum256([]byte("guardrail-issue42:" + family))
	return h[0] < 77
}

func main() {
	th := flag.String("trufflehog", "", "directory of the trufflehog module (go mod download -json …)")
	thVersion := flag.String("trufflehog-version", "github.com/trufflesecurity/trufflehog/v3@v3.63.0", "module@version recorded as the source")
	out := flag.String("out", "", "testdata directory to write to")
	ordinary := flag.Bool("ordinary", false, "write secrets_ordinary.txt.gz instead")
	glDump := flag.String("gitleaks-dump", "", "write secrets_gitleaks_corpus.jsonl.gz from this dump of gitleaks' rule tests instead")
	trivyDir := flag.String("trivy", "", "write secrets_trivy_corpus.jsonl.gz from the built-in secret rules of the trivy module in this directory instead")
	trivyDump := flag.String("trivy-rules", "", "write secrets_trivy_corpus.jsonl.gz from this dump of trivy's built-in secret rules instead")
	trivyVersion := flag.String("trivy-version", "github.com/aquasecurity/trivy@v0.74.0", "module@version recorded as the trivy corpus's source")
	flag.Parse()
	if *out == "" {
		log.Fatal("-out is required")
	}
	if *ordinary {
		writeOrdinary(*out)
		return
	}
	if *glDump != "" {
		writeGitleaks(*glDump, *out)
		return
	}
	if *trivyDir != "" {
		*trivyDump = filepath.Join(os.TempDir(), "trivy_rules.jsonl")
		dumpTrivyRules(*trivyDir, *trivyDump)
	}
	if *trivyDump != "" {
		writeTrivy(*trivyDump, *trivyVersion, *out)
		return
	}
	if *th == "" {
		log.Fatal("-trufflehog is required")
	}
	recs, stats := trufflehog(*th, *thVersion)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			log.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*out, "secrets_vendor_corpus.jsonl.gz"), buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Print(stats)
}

// Encode is how values are stored.
func Encode(v string) string {
	b := []byte(v)
	for i := range b {
		b[i] ^= 0x5A
	}
	return hex.EncodeToString(b)
}

// secretVar reports whether a variable's name says it holds a secret's pattern.
func secretVar(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "secret", "token", "pass", "pword", "pwd", "auth", "cred", "sig", "private", "priv"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	if n == "pat" || n == "pattern" || n == "regex" || n == "re" {
		return true
	}
	return false
}

// detector is what the generator read of one detector package.
type detector struct {
	family, dir string
	keywords    []string
	pats        []namedPat
}

type namedPat struct{ name, expr string }

var commonConsts = map[string]string{
	"UUIDPattern":          `\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`,
	"UUIDPatternUpperCase": `\b([0-9A-Z]{8}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{12})\b`,
	"RegexPattern":         "0-9a-z",
	"AlphaNumPattern":      "0-9a-zA-Z",
	"HexPattern":           "0-9a-f",
}

// eval evaluates a pattern expression: string literals, '+', detectors.PrefixRegex,
// common.BuildRegex and common's pattern constants.
func eval(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return eval(x.X)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok1 := eval(x.X)
		b, ok2 := eval(x.Y)
		return a + b, ok1 && ok2
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "common" {
			v, ok := commonConsts[x.Sel.Name]
			return v, ok
		}
	case *ast.CallExpr:
		sel, ok := x.Fun.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		pkg, _ := sel.X.(*ast.Ident)
		if pkg == nil {
			return "", false
		}
		switch pkg.Name + "." + sel.Sel.Name {
		case "detectors.PrefixRegex":
			if len(x.Args) != 1 {
				return "", false
			}
			kws, ok := stringList(x.Args[0])
			if !ok {
				return "", false
			}
			return `(?i)(?:` + strings.Join(kws, "|") + `)(?:.|[\n\r]){0,40}`, true
		case "common.BuildRegex":
			if len(x.Args) != 3 {
				return "", false
			}
			a, ok1 := eval(x.Args[0])
			b, ok2 := eval(x.Args[1])
			n, ok3 := x.Args[2].(*ast.BasicLit)
			if !ok1 || !ok2 || !ok3 {
				return "", false
			}
			return fmt.Sprintf(`\b([%s%s]{%s})\b`, a, b, n.Value), true
		}
	}
	return "", false
}

func stringList(e ast.Expr) ([]string, bool) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	var out []string
	for _, el := range cl.Elts {
		s, ok := eval(el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

var versionSuffix = regexp.MustCompile(`v[0-9]+$`)

// readDetectors parses every detector package under root/pkg/detectors.
func readDetectors(root string) (map[string]*detector, int) {
	dets := map[string]*detector{}
	skipped := 0
	base := filepath.Join(root, "pkg", "detectors")
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) < 2 {
			return nil // the detectors package itself
		}
		family := versionSuffix.ReplaceAllString(parts[0], "")
		if family == "" {
			family = parts[0]
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		key := filepath.Dir(rel)
		det := dets[key]
		if det == nil {
			det = &detector{family: family, dir: filepath.ToSlash(key)}
			dets[key] = det
		}
		for _, decl := range f.Decls {
			switch g := decl.(type) {
			case *ast.GenDecl:
				if g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for k, v := range vs.Values {
						call, ok := v.(*ast.CallExpr)
						if !ok {
							continue
						}
						sel, ok := call.Fun.(*ast.SelectorExpr)
						if !ok || sel.Sel.Name != "MustCompile" || len(call.Args) != 1 {
							continue
						}
						name := vs.Names[k].Name
						if !secretVar(name) {
							continue
						}
						expr, ok := eval(call.Args[0])
						if !ok {
							skipped++
							continue
						}
						det.pats = append(det.pats, namedPat{name, expr})
					}
				}
			case *ast.FuncDecl:
				if g.Name.Name != "Keywords" || g.Body == nil {
					continue
				}
				ast.Inspect(g.Body, func(n ast.Node) bool {
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						if kws, ok := stringList(r.Results[0]); ok {
							det.keywords = kws
						}
					}
					return true
				})
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return dets, skipped
}

// group returns the first capture group of a pattern, without (?i) flags (so that literals
// and classes keep the case they are written in), and whether the pattern has one.
func group(expr string) (*syntax.Regexp, bool) {
	expr = strings.ReplaceAll(expr, "(?i)", "")
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	var found *syntax.Regexp
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if found != nil {
			return
		}
		if r.Op == syntax.OpCapture && r.Cap == 1 {
			found = r.Sub[0]
			return
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	if found == nil {
		return nil, false
	}
	if !hasRun(found) {
		// The first group is only a prefix ("(shpat_|shppa_)([0-9a-f]{32})"): the value is
		// the groups of the top-level sequence from the first to the last, and what is
		// between them.
		if re.Op == syntax.OpConcat {
			first, last := -1, -1
			for k, s := range re.Sub {
				if s.Op == syntax.OpCapture {
					if first < 0 {
						first = k
					}
					last = k
				}
			}
			if first >= 0 && last > first {
				return &syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[first : last+1]}, true
			}
		}
	}
	return found, true
}

// hasRun reports a repetition in r.
func hasRun(r *syntax.Regexp) bool {
	switch r.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		return true
	}
	for _, s := range r.Sub {
		if hasRun(s) {
			return true
		}
	}
	return false
}

// distinctive reports a literal of three or more characters in r.
func distinctive(r *syntax.Regexp) bool {
	if r.Op == syntax.OpLiteral && len(r.Rune) >= 3 {
		return true
	}
	for _, s := range r.Sub {
		if distinctive(s) {
			return true
		}
	}
	return false
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// classRunes lists the printable ASCII runes of a class.
func classRunes(r *syntax.Regexp) []rune {
	var out []rune
	for i := 0; i+1 < len(r.Rune); i += 2 {
		for c := r.Rune[i]; c <= r.Rune[i+1] && c <= 0x7e; c++ {
			if c > 0x20 {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 || len(out) > 90 {
		return []rune(alnum) // a negated class: anything but a few bytes
	}
	return out
}

// gen is a random instance of r. mut, when not nil, decides a mutation at a run.
type gen struct {
	rng *rand.Rand
	// The mutation to apply to the run with index target (runs are counted in order).
	target int
	mutate string
	runs   int
	done   bool
}

func (g *gen) count(min, max int) int {
	if max < 0 {
		max = min + 12
	}
	if max > min+64 {
		max = min + 64
	}
	return min + g.rng.IntN(max-min+1)
}

func (g *gen) emit(b *strings.Builder, r *syntax.Regexp) {
	switch r.Op {
	case syntax.OpLiteral:
		s := string(r.Rune)
		if g.mutate == "literal" && !g.done && len(r.Rune) >= 3 {
			rs := []rune(s)
			k := g.rng.IntN(len(rs))
			rs[k] = otherOfKind(g.rng, rs[k])
			s = string(rs)
			g.done = true
		}
		b.WriteString(s)
	case syntax.OpCharClass:
		rs := classRunes(r)
		b.WriteRune(rs[g.rng.IntN(len(rs))])
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		// An unescaped '.' in a capture group is, nearly always, a literal dot written
		// without its backslash (".atlasv1.", "@apiconnector.com").
		b.WriteByte('.')
	case syntax.OpCapture:
		g.emit(b, r.Sub[0])
	case syntax.OpConcat:
		for _, s := range r.Sub {
			g.emit(b, s)
		}
	case syntax.OpAlternate:
		g.emit(b, r.Sub[g.rng.IntN(len(r.Sub))])
	case syntax.OpQuest:
		if g.rng.IntN(2) == 0 {
			g.emit(b, r.Sub[0])
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		min, max := 0, -1
		switch r.Op {
		case syntax.OpPlus:
			min = 1
		case syntax.OpRepeat:
			min, max = r.Min, r.Max
		}
		n := g.count(min, max)
		run := g.runs
		g.runs++
		isClass := r.Sub[0].Op == syntax.OpCharClass
		if run == g.target && !g.done && isClass {
			switch g.mutate {
			case "short":
				if min >= 2 {
					n = min - 1
					g.done = true
				}
			case "long":
				if max >= 0 && max < 200 {
					n = max + 1
					g.done = true
				}
			case "badchar":
				if n >= 4 {
					rs := classRunes(r.Sub[0])
					k := 1 + g.rng.IntN(n-2)
					for i := 0; i < n; i++ {
						if i == k {
							b.WriteRune(outside(g.rng, rs))
							continue
						}
						b.WriteRune(rs[g.rng.IntN(len(rs))])
					}
					g.done = true
					return
				}
			}
		}
		for i := 0; i < n; i++ {
			g.emit(b, r.Sub[0])
		}
	}
}

// otherOfKind returns another character of c's kind (digit, lower, upper), or a letter.
func otherOfKind(rng *rand.Rand, c rune) rune {
	pool := "abcdefghijklmnopqrstuvwxyz"
	switch {
	case unicode.IsDigit(c):
		pool = "0123456789"
	case unicode.IsUpper(c):
		pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	}
	for {
		o := rune(pool[rng.IntN(len(pool))])
		if o != c {
			return o
		}
	}
}

// outside returns a character not in rs: a letter of a case the class lacks, or a symbol.
func outside(rng *rand.Rand, rs []rune) rune {
	in := map[rune]bool{}
	for _, r := range rs {
		in[r] = true
	}
	pool := "GHXYZghxyz!#%*@$"
	for k := 0; k < 100; k++ {
		c := rune(pool[rng.IntN(len(pool))])
		if !in[c] {
			return c
		}
	}
	return '#'
}

// contexts are where positives and near misses are written; %[1]s is the vendor keyword in
// lower case, %[2]s in upper case, %[3]s the value.
var contexts = []string{
	"%[2]s_API_KEY=%[3]s\n",
	`{"%[1]s_token": "%[3]s", "region": "us-east-1"}`,
	"%[1]s:\n  api_key: %[3]s\n  timeout: 30\n",
	"export %[2]s_SECRET=\"%[3]s\"\n",
	`client := %[1]s.NewClient("%[3]s")`,
	"curl -H \"Authorization: Bearer %[3]s\" https://api.%[1]s.example/v1/me",
	"Here is the %[1]s key you asked for: %[3]s",
	"%[1]s secret %[3]s",
	"2024-05-02T10:11:12Z INFO connecting to %[1]s with credential %[3]s",
	"config.%[1]s.token = '%[3]s'",
}

// bareContexts hold a distinctive value with no keyword near it.
var bareContexts = []string{
	"token: %[3]s\n",
	"I found %[3]s in the build log, is it still valid?",
	"value=%[3]s",
	"[\"%[3]s\"]",
}

// wordsNearMiss are a vendor keyword followed by text that is not a secret.
var wordsNearMiss = []string{
	"%[2]s_API_KEY=set-in-the-%[1]s-dashboard\n",
	`{"%[1]s_token": "rotated every ninety days"}`,
	"%[1]s secret rotation is scheduled for 2024-06-01 at 10:00 UTC",
	"export %[2]s_SECRET=\"$%[2]s_SECRET_FROM_VAULT\"\n",
	"the %[1]s api key lives in the team password manager",
	"%[1]s:\n  api_key: ${%[2]s_KEY}\n",
	"%[2]s_TOKEN=%[1]s-production-readonly\n",
	"see docs/%[1]s-token-setup.md for how to get a key",
}

func keyword(d *detector) string {
	kw := d.family
	if len(d.keywords) > 0 {
		kw = d.keywords[0]
	}
	kw = strings.ToLower(kw)
	kw = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, kw)
	if len(kw) < 3 {
		kw = d.family
	}
	return kw
}

func trufflehog(root, version string) ([]Record, string) {
	dets, skipped := readDetectors(root)
	keys := make([]string, 0, len(dets))
	for k := range dets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var recs []Record
	families := map[string]bool{}
	distinctiveFamilies := map[string]bool{}
	nPats, noGroup := 0, 0
	for _, key := range keys {
		d := dets[key]
		if len(d.pats) == 0 {
			continue
		}
		kw := keyword(d)
		split := "tuning"
		if HeldOut(d.family) {
			split = "heldout"
		}
		h := sha256.Sum256([]byte(d.dir))
		rng := rand.New(rand.NewPCG(uint64(h[0])<<8|uint64(h[1]), uint64(h[2])<<8|uint64(h[3])))
		for _, p := range d.pats {
			g, ok := group(p.expr)
			if !ok {
				noGroup++
				continue
			}
			anch, err := regexp.Compile(`^(?:` + g.String() + `)$`)
			if err != nil {
				noGroup++
				continue
			}
			nPats++
			dist := distinctive(g)
			families[d.family] = true
			if dist {
				distinctiveFamilies[d.family] = true
			}
			src := version + " pkg/detectors/" + d.dir + ":" + p.name
			add := func(kind, ctx, v string) {
				recs = append(recs, Record{Family: d.family, Split: split, Distinctive: dist, Kind: kind, Source: src,
					Context: fmt.Sprintf(ctx, kw, strings.ToUpper(kw), "%s"), Value: Encode(v)})
			}
			value := func(mutate string, target int) (string, bool) {
				for try := 0; try < 20; try++ {
					gn := &gen{rng: rng, target: target, mutate: mutate}
					var b strings.Builder
					gn.emit(&b, g)
					v := strings.TrimSpace(b.String())
					if v == "" || strings.ContainsAny(v, "\n\r\t") {
						continue
					}
					if isGitHub(v) || isNPM(v) {
						v = withChecksum(v, mutate == "checksum")
					} else if mutate == "checksum" {
						continue
					}
					if mutate == "" {
						if anch.MatchString(v) {
							return v, true
						}
						continue
					}
					if !gn.done && mutate != "checksum" {
						continue
					}
					if mutate == "checksum" || !anch.MatchString(v) {
						return v, true
					}
				}
				return "", false
			}
			// Positives: six values in keyword contexts, and three more with no keyword for
			// a distinctive format.
			for i := 0; i < 6; i++ {
				if v, ok := value("", -1); ok {
					add("pos", contexts[rng.IntN(len(contexts))], v)
				}
			}
			if dist {
				for i := 0; i < 3; i++ {
					if v, ok := value("", -1); ok {
						add("pos", bareContexts[rng.IntN(len(bareContexts))], v)
					}
				}
			}
			// Near misses.
			runs := (&gen{rng: rng, target: -1}).countRuns(g)
			for _, m := range []string{"short", "long", "badchar"} {
				for try := 0; try < 2; try++ {
					if runs == 0 {
						break
					}
					if v, ok := value(m, rng.IntN(runs)); ok {
						add("near-"+m, contexts[rng.IntN(len(contexts))], v)
						break
					}
				}
			}
			if dist {
				if v, ok := value("literal", -1); ok {
					add("near-literal", contexts[rng.IntN(len(contexts))], v)
				}
			}
			if v, ok := value("", -1); ok && (isGitHub(v) || isNPM(v)) {
				if v, ok := value("checksum", -1); ok {
					add("near-checksum", contexts[rng.IntN(len(contexts))], v)
				}
			}
		}
		if len(d.pats) > 0 {
			ctx := wordsNearMiss[rng.IntN(len(wordsNearMiss))]
			recs = append(recs, Record{Family: d.family, Split: split, Kind: "near-words", Source: version + " pkg/detectors/" + d.dir,
				Context: fmt.Sprintf(ctx, kw, strings.ToUpper(kw)), Value: ""})
		}
	}
	var nd, nh, ndh int
	for f := range families {
		if HeldOut(f) {
			nh++
			if distinctiveFamilies[f] {
				ndh++
			}
		}
		if distinctiveFamilies[f] {
			nd++
		}
	}
	return recs, fmt.Sprintf("%d records, %d families (%d distinctive), held out %d (%d distinctive); %d patterns used, %d skipped (not evaluable), %d without a capture group",
		len(recs), len(families), nd, nh, ndh, nPats, skipped, noGroup)
}

// countRuns counts the repetitions in r, in the order emit meets them.
func (g *gen) countRuns(r *syntax.Regexp) int {
	n := 0
	switch r.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		n++
	}
	for _, s := range r.Sub {
		n += g.countRuns(s)
	}
	return n
}

// GitHub's tokens (ghp_ gho_ ghu_ ghs_ ghr_ and 36 characters) and npm's (npm_ and 36) end
// in a CRC32 of the rest of the body, in base62, six digits: a generated value gets a
// correct one (or, for a near miss, a wrong one), as real tokens have.
func isGitHub(v string) bool {
	return len(v) == 40 && (strings.HasPrefix(v, "ghp_") || strings.HasPrefix(v, "gho_") || strings.HasPrefix(v, "ghu_") ||
		strings.HasPrefix(v, "ghs_") || strings.HasPrefix(v, "ghr_")) && isAlnum(v[4:])
}

func isNPM(v string) bool { return len(v) == 40 && strings.HasPrefix(v, "npm_") && isAlnum(v[4:]) }

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(alnum, rune(s[i])) {
			return false
		}
	}
	return true
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func withChecksum(v string, wrong bool) string {
	body := v[4:34]
	c := crc32.ChecksumIEEE([]byte(body))
	if wrong {
		c ^= 0x5A5A
	}
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = base62[c%62]
		c /= 62
	}
	return v[:34] + string(d[:])
}

// writeOrdinary collects the ordinary-text corpus: logs of this machine's package manager
// and the Go toolchain's documentation, each file headed by a line naming it.
func writeOrdinary(out string) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w := bufio.NewWriter(zw)
	for _, p := range []string{"/var/log/dpkg.log", "/var/log/apt/history.log", "/var/log/apt/term.log", "/var/log/alternatives.log"} {
		b, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(w, "\x00FILE log %s\n", p)
		w.Write(b)
	}
	w.Flush()
	zw.Close()
	if err := os.WriteFile(filepath.Join(out, "secrets_ordinary_logs.txt.gz"), buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

// writeGitleaks converts a dump of gitleaks' rule tests (see testdata/README.md: the true
// and false positives each rule of github.com/zricethezav/gitleaks/v8@v8.30.1 validates
// itself with, and the secret its detector extracts from each true positive) into
// secrets_gitleaks_corpus.jsonl.gz: a positive per true positive with its first secret
// marked, and a near miss ("near-fp") per false positive. A rule's family is its id's first
// word; the split is HeldOut's.
func writeGitleaks(dump, out string) {
	f, err := os.Open(dump)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var recs []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var row struct {
			Rule, Regex, Kind, Text string
			Secrets                 []string
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			log.Fatal(err)
		}
		family := strings.SplitN(row.Rule, "-", 2)[0]
		split := "tuning"
		if HeldOut(family) {
			split = "heldout"
		}
		src := "github.com/zricethezav/gitleaks/v8@v8.30.1 cmd/generate/config/rules:" + row.Rule
		dist := false
		if g, ok := group(row.Regex); ok {
			dist = distinctive(g)
		}
		switch row.Kind {
		case "tp":
			if len(row.Secrets) == 0 || row.Secrets[0] == "" {
				continue
			}
			v := row.Secrets[0]
			i := strings.Index(row.Text, v)
			if i < 0 {
				continue
			}
			if strings.Contains(row.Text, "%s") {
				continue // the test reads the first %s of a context as the value's place
			}
			ctx := row.Text[:i] + "%s" + row.Text[i+len(v):]
			recs = append(recs, Record{Family: family, Split: split, Distinctive: dist, Kind: "pos", Source: src, Context: ctx, Value: Encode(v)})
		case "fp":
			recs = append(recs, Record{Family: family, Split: split, Distinctive: dist, Kind: "near-fp", Source: src,
				Context: "%s", Value: Encode(row.Text)})
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			log.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "secrets_gitleaks_corpus.jsonl.gz"), buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d records", len(recs))
}
