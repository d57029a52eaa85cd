package injection

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
)

// patchFor is the JSON patch (RFC 6902) that turns orig into mutated, written directly
// rather than found by diffing two JSON documents: that diff, and the serialization of
// every app container it implies, cost more than the rest of an admission
// (BenchmarkHandle). It relies on what render does: label and annotation entries set or
// removed, env vars and volumes appended, the guard prepended to one container list.
func patchFor(orig, mutated *corev1.Pod) []jsonpatch.Operation {
	ops := make([]jsonpatch.Operation, 0, 12)
	ops = mapPatch(ops, "/metadata/labels", orig.Labels, mutated.Labels)
	ops = mapPatch(ops, "/metadata/annotations", orig.Annotations, mutated.Annotations)

	// Env first, at the original indexes; the guard's insertion at index 0 comes after.
	initShift := len(mutated.Spec.InitContainers) - len(orig.Spec.InitContainers)
	shift := len(mutated.Spec.Containers) - len(orig.Spec.Containers)
	for i := range orig.Spec.InitContainers {
		ops = envPatch(ops, "/spec/initContainers/"+strconv.Itoa(i), orig.Spec.InitContainers[i].Env, mutated.Spec.InitContainers[i+initShift].Env)
	}
	for i := range orig.Spec.Containers {
		ops = envPatch(ops, "/spec/containers/"+strconv.Itoa(i), orig.Spec.Containers[i].Env, mutated.Spec.Containers[i+shift].Env)
	}
	ops = prependPatch(ops, "/spec/initContainers", len(orig.Spec.InitContainers), mutated.Spec.InitContainers[:initShift])
	ops = prependPatch(ops, "/spec/containers", len(orig.Spec.Containers), mutated.Spec.Containers[:shift])
	if mutated.Spec.ServiceAccountName != orig.Spec.ServiceAccountName {
		ops = append(ops, jsonpatch.Operation{Operation: "add", Path: "/spec/serviceAccountName", Value: mutated.Spec.ServiceAccountName})
	}
	ops = appendPatch(ops, "/spec/volumes", len(orig.Spec.Volumes), mutated.Spec.Volumes[len(orig.Spec.Volumes):])
	return ops
}

func envPatch(ops []jsonpatch.Operation, container string, orig, mutated []corev1.EnvVar) []jsonpatch.Operation {
	return appendPatch(ops, container+"/env", len(orig), mutated[len(orig):])
}

// appendPatch appends added to the list at path, which has n members.
func appendPatch[T any](ops []jsonpatch.Operation, path string, n int, added []T) []jsonpatch.Operation {
	switch {
	case len(added) == 0:
		return ops
	case n == 0:
		return append(ops, jsonpatch.Operation{Operation: "add", Path: path, Value: added})
	}
	for i := range added {
		ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path + "/-", Value: added[i]})
	}
	return ops
}

// prependPatch inserts added before the n members of the list at path.
func prependPatch[T any](ops []jsonpatch.Operation, path string, n int, added []T) []jsonpatch.Operation {
	switch {
	case len(added) == 0:
		return ops
	case n == 0:
		return append(ops, jsonpatch.Operation{Operation: "add", Path: path, Value: added})
	}
	for i := len(added) - 1; i >= 0; i-- {
		ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path + "/0", Value: added[i]})
	}
	return ops
}

func mapPatch(ops []jsonpatch.Operation, path string, orig, mutated map[string]string) []jsonpatch.Operation {
	if len(orig) == 0 {
		if len(mutated) > 0 {
			ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path, Value: mutated})
		}
		return ops
	}
	for k, v := range mutated {
		if old, ok := orig[k]; !ok || old != v {
			ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path + "/" + escapePointer(k), Value: v})
		}
	}
	for k := range orig {
		if _, ok := mutated[k]; !ok {
			ops = append(ops, jsonpatch.Operation{Operation: "remove", Path: path + "/" + escapePointer(k)})
		}
	}
	return ops
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// encodePatch serializes ops. encoding/json would compact each operation's output again
// (jsonpatch.Operation is a json.Marshaler), which costs as much as encoding the guard
// container once more; writing the envelope here encodes every value once.
func encodePatch(ops []jsonpatch.Operation) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(4096)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"op":`)
		if err := enc.Encode(op.Operation); err != nil {
			return nil, err
		}
		buf.WriteString(`,"path":`)
		if err := enc.Encode(op.Path); err != nil {
			return nil, err
		}
		if op.Operation != "remove" {
			buf.WriteString(`,"value":`)
			if err := enc.Encode(op.Value); err != nil {
				return nil, err
			}
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
