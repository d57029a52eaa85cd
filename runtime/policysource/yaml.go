package policysource

import (
	"encoding/json"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v2"
)

// yamlToJSON converts one YAML document to JSON, as sigs.k8s.io/yaml (what kubectl uses)
// does, on the same YAML parser: mapping keys that are numbers or booleans become
// strings, a key defined twice is an error. The guard does not link sigs.k8s.io/yaml,
// so that it links no Kubernetes module (runtime/linkcheck_test.go). Unlike
// sigs.k8s.io/yaml.Unmarshal into a Go type, a scalar is not converted to the type of the
// field it lands in: `reason: 5` is a number where the spec wants a string, and is refused,
// as the apiserver refuses it.
func yamlToJSON(doc []byte) ([]byte, error) {
	var v any
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return nil, err
	}
	j, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// jsonable turns the maps yaml.v2 decodes (keyed by any) into maps keyed by strings.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			var key string
			switch k := k.(type) {
			case string:
				key = k
			case int:
				key = strconv.Itoa(k)
			case int64:
				key = strconv.FormatInt(k, 10)
			case uint64:
				key = strconv.FormatUint(k, 10)
			case float64:
				key = strconv.FormatFloat(k, 'g', -1, 64)
			case bool:
				key = strconv.FormatBool(k)
			default:
				return nil, fmt.Errorf("unsupported map key of type %T: %v", k, k)
			}
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[key] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}
