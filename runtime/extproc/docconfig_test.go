package extproc

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/encoding/protojson"

	// The types the sample's typed_config fields name, for protojson to resolve them.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
)

// The Envoy configuration docs/extproc.md gives is a valid v3 bootstrap (parsed and
// validated with Envoy's own protos, its typed configs included), and its ext_proc filter
// has the processing modes and fail-closed settings the server is built for.
func TestTheDocumentedEnvoyConfigIsValid(t *testing.T) {
	doc, err := os.ReadFile("../../docs/extproc.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\nstatic_resources:")
	if !ok {
		t.Fatal("docs/extproc.md has no yaml block starting with static_resources")
	}
	block, _, _ := strings.Cut(rest, "```")
	var v any
	if err := yaml.Unmarshal([]byte("static_resources:"+block), &v); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(jsonable(v))
	if err != nil {
		t.Fatal(err)
	}
	var boot bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &boot); err != nil {
		t.Fatalf("not a v3 bootstrap: %v", err)
	}
	if err := boot.ValidateAll(); err != nil {
		t.Fatalf("invalid bootstrap: %v", err)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := boot.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	if err := hcm.ValidateAll(); err != nil {
		t.Fatalf("invalid connection manager: %v", err)
	}
	var ep filterv3.ExternalProcessor
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&ep); err != nil {
		t.Fatal(err)
	}
	if err := ep.ValidateAll(); err != nil {
		t.Fatalf("invalid ext_proc filter: %v", err)
	}
	pm := ep.GetProcessingMode()
	if ep.GetFailureModeAllow() || !ep.GetAllowModeOverride() ||
		pm.GetRequestHeaderMode() != filterv3.ProcessingMode_SEND || pm.GetRequestBodyMode() != filterv3.ProcessingMode_BUFFERED ||
		pm.GetResponseHeaderMode() != filterv3.ProcessingMode_SEND || pm.GetResponseBodyMode() != filterv3.ProcessingMode_STREAMED ||
		ep.GetMessageTimeout().AsDuration() < 1e9 {
		t.Errorf("the documented filter is not the one the server is built for: %v", &ep)
	}
	if cluster := ep.GetGrpcService().GetEnvoyGrpc().GetClusterName(); cluster != boot.GetStaticResources().GetClusters()[0].GetName() {
		t.Errorf("the filter calls cluster %q", cluster)
	}

	// The same cluster over TLS (a SharedGuard with spec.tls): valid, HTTP/2, offering h2 by
	// ALPN (the processor's gRPC server requires it), checking the Service's name against
	// the issuer's CA.
	_, rest, ok = strings.Cut(string(doc), "```yaml\n# The guard-extproc cluster of the sample above, for a SharedGuard with spec.tls.")
	if !ok {
		t.Fatal("docs/extproc.md has no TLS cluster block")
	}
	block, _, _ = strings.Cut(rest, "```")
	v = nil
	if err := yaml.Unmarshal([]byte(block), &v); err != nil {
		t.Fatal(err)
	}
	if js, err = json.Marshal(jsonable(v)); err != nil {
		t.Fatal(err)
	}
	var cluster clusterv3.Cluster
	if err := protojson.Unmarshal(js, &cluster); err != nil {
		t.Fatalf("not a v3 cluster: %v", err)
	}
	if err := cluster.ValidateAll(); err != nil {
		t.Fatalf("invalid cluster: %v", err)
	}
	var upstream tlsv3.UpstreamTlsContext
	if err := cluster.GetTransportSocket().GetTypedConfig().UnmarshalTo(&upstream); err != nil {
		t.Fatal(err)
	}
	if err := upstream.ValidateAll(); err != nil {
		t.Fatalf("invalid TLS context: %v", err)
	}
	vc := upstream.GetCommonTlsContext().GetValidationContext()
	sans := vc.GetMatchTypedSubjectAltNames()
	if cluster.GetName() != "guard-extproc" || upstream.GetSni() != "llm-extproc.team-a.svc" ||
		strings.Join(upstream.GetCommonTlsContext().GetAlpnProtocols(), ",") != "h2" || vc.GetTrustedCa().GetFilename() == "" ||
		len(sans) != 1 || sans[0].GetSanType() != tlsv3.SubjectAltNameMatcher_DNS || sans[0].GetMatcher().GetExact() != upstream.GetSni() ||
		cluster.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetPortValue() != 15081 {
		t.Errorf("the documented TLS cluster is not the one the processor needs: %v", &cluster)
	}
}

// jsonable turns what yaml.v2 decodes (maps with interface keys) into what encoding/json
// encodes.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k.(string)] = jsonable(e) //nolint:forcetypeassert // YAML mapping keys of the sample are strings
		}
		return m
	case []any:
		for i := range x {
			x[i] = jsonable(x[i])
		}
	}
	return v
}
