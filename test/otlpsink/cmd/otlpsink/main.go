// Command otlpsink is a trace collector for the cluster tests: it takes OTLP/HTTP exports
// (binary protobuf on /v1/traces, gzip or not) as a collector's otlp receiver does, and
// answers GET /stats with what it received, so that a test reading it from outside the pod
// can tell which guards exported which spans and with which credentials:
//
//   - the spans: name, kind, the resource's service and k8s attributes, and the span's
//     attribute keys with the string values of a few the guard sets (never a value a test
//     did not ask for);
//   - the Authorization headers, as SHA-256 digests (the sink never holds a token in the
//     clear in what it answers);
//   - how many exports contained any of the --forbid strings anywhere in their decoded body.
//
// It refuses what a collector refuses: another method, another path, another content type,
// a body that does not decode.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is what /stats says of one received span.
type Span struct {
	Name     string            `json:"name"`
	Kind     string            `json:"kind"`
	Resource map[string]string `json:"resource"`
	Keys     []string          `json:"keys"`
	Values   map[string]string `json:"values"`
}

// Stats is /stats's answer.
type Stats struct {
	Exports         int      `json:"exports"`
	Refused         int      `json:"refused"`
	Authorizations  []string `json:"authorizations"`
	ForbiddenExport int      `json:"forbiddenExports"`
	Spans           []Span   `json:"spans"`
}

// shownValues are the span attributes whose string values /stats shows: the guard's names
// for what it judged, never content.
var shownValues = []string{"gen_ai.operation.name", "gen_ai.request.model", "guardrail.request.outcome",
	"guardrail.name", "guardrail.namespace", "guardrail.phase", "guardrail.outcome", "guardrail.mode"}

// shownResource are the resource attributes /stats shows.
var shownResource = []string{"service.name", "k8s.namespace.name", "k8s.pod.name"}

type sink struct {
	forbid []string
	mu     sync.Mutex
	stats  Stats
}

func (s *sink) traces(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		s.refuse(w, http.StatusUnsupportedMediaType, "POST application/x-protobuf only")
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, 16<<20)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			s.refuse(w, http.StatusBadRequest, "gzip")
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "body")
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(raw, req); err != nil {
		s.refuse(w, http.StatusBadRequest, "not an ExportTraceServiceRequest")
		return
	}
	s.mu.Lock()
	s.stats.Exports++
	if a := r.Header.Get("Authorization"); a != "" {
		sum := sha256.Sum256([]byte(a))
		if d := hex.EncodeToString(sum[:]); !slices.Contains(s.stats.Authorizations, d) {
			s.stats.Authorizations = append(s.stats.Authorizations, d)
		}
	}
	for _, f := range s.forbid {
		if bytes.Contains(raw, []byte(f)) {
			s.stats.ForbiddenExport++
			break
		}
	}
	for _, rs := range req.GetResourceSpans() {
		res := pick(rs.GetResource().GetAttributes(), shownResource)
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				out := Span{Name: sp.GetName(), Kind: sp.GetKind().String(), Resource: res,
					Values: pick(sp.GetAttributes(), shownValues)}
				for _, kv := range sp.GetAttributes() {
					out.Keys = append(out.Keys, kv.GetKey())
				}
				s.stats.Spans = append(s.stats.Spans, out)
			}
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func (s *sink) refuse(w http.ResponseWriter, code int, why string) {
	s.mu.Lock()
	s.stats.Refused++
	s.mu.Unlock()
	http.Error(w, why, code)
}

func (s *sink) report(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&s.stats)
}

// pick returns the string values of keys among kvs.
func pick(kvs []*commonpb.KeyValue, keys []string) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		if slices.Contains(keys, kv.GetKey()) {
			out[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
	}
	return out
}

func main() {
	listen := flag.String("listen", ":4318", "Address of the OTLP/HTTP receiver and of /stats.")
	forbid := flag.String("forbid", "", "Comma-separated strings no export may contain; /stats counts the exports that do.")
	flag.Parse()
	s := &sink{}
	for f := range strings.SplitSeq(*forbid, ",") {
		if f != "" {
			s.forbid = append(s.forbid, f)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", s.traces)
	mux.HandleFunc("GET /stats", s.report)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("otlpsink: listening on %s", *listen)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
