package main

// The third vendor-format corpus (round 3 of issue 42): secrets_trivy_corpus.jsonl.gz, from
// the built-in secret rules of trivy (github.com/aquasecurity/trivy@v0.74.0,
// pkg/fanal/secret/builtin-rules.go), dumped as JSON lines by a copy of that file compiled
// against stubs of its three imports (testdata/README.md says how). Every record is held
// out: the corpus was written, and measured once, before any detector of round 3 changed.
//
// Its contexts are new ones, written for this corpus and not used by the other two, so
// that the figures measure formats and contexts the detectors were not tuned on.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
)

// trivyRule is a line of the rule dump.
type trivyRule struct {
	ID       string   `json:"id"`
	Category string   `json:"category"`
	Regex    string   `json:"regex"`
	Group    string   `json:"group"`
	Keywords []string `json:"keywords"`
}

// Keyword contexts of the trivy corpus: %[1]s the vendor keyword in lower case, %[2]s in
// upper case, %[3]s the value.
var trivyContexts = []string{
	"%[2]s_ACCESS_TOKEN=%[3]s\n",
	"[%[1]s]\napi_key = \"%[3]s\"\nendpoint = \"https://api.example.net\"\n",
	"SETTINGS = {\"%[1]s_secret\": \"%[3]s\", \"debug\": False}\n",
	"%[1]s.api.key=%[3]s\n%[1]s.api.timeout=30\n",
	"docker run --rm -e %[2]s_TOKEN=%[3]s registry.example.net/app:1.4\n",
	"const %[1]sApiKey = \"%[3]s\";\n",
	"    env:\n      - name: %[2]s_API_KEY\n        value: \"%[3]s\"\n",
	"http GET https://api.example.net/v2/items 'X-Api-Key:%[3]s' # %[1]s\n",
	"10:42:07.113 DEBUG %[1]s.client init token=%[3]s retries=3\n",
	"The %[1]s credentials for staging are `%[3]s`, please rotate them after the demo.",
}

// Contexts with no keyword, for a distinctive value.
var trivyBareContexts = []string{
	"```\n%[3]s\n```\n",
	"can someone check whether %[3]s still works? it was in an old commit",
	"<string>%[3]s</string>",
	"  - %[3]s\n",
	"args = [\"--verbose\", \"%[3]s\"]\n",
}

// Vendor keyword and text that is not a secret.
var trivyWordsNearMiss = []string{
	"%[2]s_ACCESS_TOKEN=${{ secrets.%[2]s_ACCESS_TOKEN }}\n",
	"[%[1]s]\napi_key = \"\" # filled in by the deploy job\n",
	"the %[1]s token expired yesterday and the job failed with 401",
	"%[1]s.api.key=${%[2]s_API_KEY:-}\n",
	"    env:\n      - name: %[2]s_API_KEY\n        valueFrom:\n          secretKeyRef: {name: %[1]s, key: token}\n",
	"Rotate the %[1]s secret key every 90 days (see runbook %[1]s-rotation).",
	"const %[1]sApiKey = process.env.%[2]s_API_KEY;\n",
	"%[2]s_TOKEN=<paste the %[1]s token here>\n",
}

// dumpTrivyRules writes the dump of trivy's built-in rules: a temporary module holding
// builtin-rules.go as the module has it, but for its three imports, which are replaced by
// stubs (a category type, a check type, a map function) and a main that prints every rule's
// id, category, expression, secret group and keywords as JSON lines.
func dumpTrivyRules(trivyDir, dump string) {
	src, err := os.ReadFile(filepath.Join(trivyDir, "pkg", "fanal", "secret", "builtin-rules.go"))
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "trivydump")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rules := strings.NewReplacer(
		`"github.com/aquasecurity/trivy/pkg/fanal/types"`, `"trivydump/types"`,
		`iacRules "github.com/aquasecurity/trivy/pkg/iac/rules"`, `iacRules "trivydump/iacrules"`,
		`xslices "github.com/aquasecurity/trivy/pkg/x/slices"`, `xslices "trivydump/xslices"`,
		"package secret\n", "package main\n").Replace(string(src))
	files := map[string]string{
		"go.mod":        "module trivydump\n\ngo 1.23\n",
		"types/t.go":    "package types\n\ntype SecretRuleCategory string\n",
		"iacrules/r.go": "package rules\n\ntype Check struct{ Name, Description string }\n",
		"xslices/s.go":  "package slices\n\nfunc Map[T, U any](in []T, f func(T) U) []U {\n\tout := make([]U, 0, len(in))\n\tfor _, v := range in {\n\t\tout = append(out, f(v))\n\t}\n\treturn out\n}\n",
		"rules.go":      rules,
		"main.go":       trivyDumpMain,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("dumping trivy's rules: %v", err)
	}
	if err := os.WriteFile(dump, out, 0o644); err != nil {
		log.Fatal(err)
	}
}

const trivyDumpMain = `package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"trivydump/types"
)

type Regexp struct{ *regexp.Regexp }

func MustCompileWithoutWordPrefix(str string) *Regexp {
	return MustCompile(fmt.Sprintf("%s(%s)", startWord, str))
}

func MustCompileWithBoundaries(str string) *Regexp {
	return MustCompile(fmt.Sprintf("%s(%s)%s", startWord, str, endWord))
}

func MustCompile(str string) *Regexp { return &Regexp{regexp.MustCompile(str)} }

type AllowRule struct {
	ID, Description string
	Regex, Path     *Regexp
}

type AllowRules []AllowRule

type ExcludeBlock struct {
	Description string
	Regexes     []*Regexp
}

type Rule struct {
	ID              string
	Category        types.SecretRuleCategory
	Title, Severity string
	Regex           *Regexp
	Keywords        []string
	Path            *Regexp
	AllowRules      AllowRules
	ExcludeBlock    ExcludeBlock
	SecretGroupName string
}

func main() {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	for _, r := range builtinRules {
		_ = enc.Encode(map[string]any{"id": r.ID, "category": string(r.Category), "title": r.Title,
			"regex": r.Regex.String(), "group": r.SecretGroupName, "keywords": r.Keywords})
	}
}
`

// trivyNotSecret are the rules left out of the corpus.
var trivyNotSecret = map[string]bool{
	"private-key":              true,
	"stripe-publishable-token": true,
	"lob-pub-api-key":          true,
	"flutterwave-public-key":   true,
	"mapbox-api-token":         true,
}

// trivyValueGroup returns the expression of a rule's secret: its named group, or, when the
// rule has none (trivy then reports the whole match), the match without quotes and word
// boundaries around it and without a keyword context before it.
func trivyValueGroup(r trivyRule) (*syntax.Regexp, bool) {
	expr := strings.ReplaceAll(r.Regex, "(?i)", "")
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	if r.Group != "" {
		var found *syntax.Regexp
		var walk func(x *syntax.Regexp)
		walk = func(x *syntax.Regexp) {
			if found != nil {
				return
			}
			if x.Op == syntax.OpCapture && x.Name == r.Group {
				found = x.Sub[0]
				return
			}
			for _, s := range x.Sub {
				walk(s)
			}
		}
		walk(re)
		return found, found != nil
	}
	if re.Op != syntax.OpConcat {
		return re, true
	}
	subs := re.Sub
	isQuote := func(x *syntax.Regexp) bool {
		if x.Op == syntax.OpQuest || x.Op == syntax.OpCapture {
			if len(x.Sub) == 1 {
				x = x.Sub[0]
			}
		}
		if x.Op == syntax.OpCharClass {
			rs := classRunes(x)
			return len(rs) <= 2 && strings.ContainsAny(string(rs), `'"`)
		}
		return x.Op == syntax.OpLiteral && (string(x.Rune) == `"` || string(x.Rune) == `'`)
	}
	// A keyword context ends at the last quote before the value: keep what follows it.
	last := -1
	for k := 0; k < len(subs)-1; k++ {
		if isQuote(subs[k]) && hasRun(&syntax.Regexp{Op: syntax.OpConcat, Sub: subs[k+1:]}) {
			last = k
		}
	}
	if last >= 0 {
		subs = subs[last+1:]
	}
	for len(subs) > 0 && isQuote(subs[len(subs)-1]) {
		subs = subs[:len(subs)-1]
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}, len(subs) > 0
}

// trivyKeyword is the vendor word of a rule: its category, in letters and digits.
func trivyKeyword(r trivyRule) string {
	kw := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return c
		}
		return -1
	}, strings.ToLower(r.Category))
	if len(kw) < 3 {
		kw = strings.SplitN(r.ID, "-", 2)[0]
	}
	return kw
}

// writeTrivy writes secrets_trivy_corpus.jsonl.gz from a dump of trivy's built-in rules.
func writeTrivy(dump, version, out string) {
	f, err := os.Open(dump)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var rules []trivyRule
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r trivyRule
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			log.Fatal(err)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].ID < rules[j].ID })
	var recs []Record
	families, distFamilies := map[string]bool{}, map[string]bool{}
	var skipped []string
	wordsDone := map[string]bool{}
	for _, r := range rules {
		// A PEM block's body alone is no credential (its armour is outside the group), and
		// publishable keys are public by their vendors' documentation (Stripe pk_, Lob's
		// test_pub_/live_pub_, Flutterwave's FLWPUBK, Mapbox pk.): decided before the corpus
		// was first measured.
		if trivyNotSecret[r.ID] {
			skipped = append(skipped, r.ID)
			continue
		}
		g, ok := trivyValueGroup(r)
		if !ok || !hasRun(g) {
			skipped = append(skipped, r.ID)
			continue
		}
		anch, err := regexp.Compile(`^(?:` + g.String() + `)$`)
		if err != nil {
			skipped = append(skipped, r.ID)
			continue
		}
		family := trivyKeyword(r)
		kw := family
		if os.Getenv("SECRETSGEN_GROUPS") != "" {
			log.Printf("%s (%s): %s", r.ID, family, g)
		}
		dist := distinctive(g)
		families[family] = true
		if dist {
			distFamilies[family] = true
		}
		h := sha256.Sum256([]byte("guardrail-issue42-trivy:" + r.ID))
		rng := rand.New(rand.NewPCG(uint64(h[0])<<8|uint64(h[1]), uint64(h[2])<<8|uint64(h[3])))
		src := version + " pkg/fanal/secret/builtin-rules.go:" + r.ID
		add := func(kind, ctx, v string) {
			recs = append(recs, Record{Family: family, Split: "heldout", Distinctive: dist, Kind: kind, Source: src,
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
		for i := 0; i < 10; i++ {
			if v, ok := value("", -1); ok {
				add("pos", trivyContexts[i], v)
			}
		}
		if dist {
			for i := 0; i < 5; i++ {
				if v, ok := value("", -1); ok {
					add("pos", trivyBareContexts[i], v)
				}
			}
		}
		runs := (&gen{rng: rng, target: -1}).countRuns(g)
		for _, m := range []string{"short", "long", "badchar"} {
			for rep := 0; rep < 2; rep++ {
				for try := 0; try < 3; try++ {
					if runs == 0 {
						break
					}
					if v, ok := value(m, rng.IntN(runs)); ok {
						add("near-"+m, trivyContexts[rng.IntN(len(trivyContexts))], v)
						break
					}
				}
			}
		}
		if dist {
			for rep := 0; rep < 2; rep++ {
				if v, ok := value("literal", -1); ok {
					add("near-literal", trivyContexts[rng.IntN(len(trivyContexts))], v)
				}
			}
		}
		if v, ok := value("", -1); ok && (isGitHub(v) || isNPM(v)) {
			for rep := 0; rep < 2; rep++ {
				if v, ok := value("checksum", -1); ok {
					add("near-checksum", trivyContexts[rng.IntN(len(trivyContexts))], v)
				}
			}
		}
		if !wordsDone[family] {
			wordsDone[family] = true
			for _, k := range rng.Perm(len(trivyWordsNearMiss))[:2] {
				recs = append(recs, Record{Family: family, Split: "heldout", Kind: "near-words", Source: version + " pkg/fanal/secret/builtin-rules.go",
					Context: fmt.Sprintf(trivyWordsNearMiss[k], kw, strings.ToUpper(kw)), Value: ""})
			}
		}
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
	if err := os.WriteFile(filepath.Join(out, "secrets_trivy_corpus.jsonl.gz"), buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d records, %d families (%d distinctive), %d rules skipped", len(recs), len(families), len(distFamilies), len(skipped))
}
