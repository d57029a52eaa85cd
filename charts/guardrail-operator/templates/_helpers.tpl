{{/* The operator's objects keep fixed names: the manager and its injector refer to them
(guardrail-webhook, guardrail-control-plane, guardrail-webhook-cert,
guardrail-pod-injector), so the chart is installed once per cluster. */}}

{{- define "guardrail.labels" -}}
app.kubernetes.io/name: guardrail-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "guardrail.selector" -}}
app.kubernetes.io/name: guardrail-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "guardrail.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/* guardrail.extProcImage is the Envoy external processor's image, which SharedGuards in
ExtProc mode run: sharedGuards.extProcImage, else the release's beside the operator's. */}}
{{- define "guardrail.extProcImage" -}}
{{- if .Values.sharedGuards.extProcImage -}}
{{ .Values.sharedGuards.extProcImage }}
{{- else -}}
{{ .Values.image.repository }}-extproc:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{- define "guardrail.serviceAccount" -}}
guardrail-operator
{{- end }}

{{/* guardrail.certSecret is the Secret the manager's serving certificate lives in. The
two modes use two names: each Secret belongs to one owner (Helm, or cert-manager), so
switching modes on upgrade never asks Helm to take over cert-manager's Secret. */}}
{{- define "guardrail.certSecret" -}}
{{- if .Values.certManager.enabled -}}
guardrail-webhook-tls
{{- else -}}
guardrail-webhook-cert
{{- end }}
{{- end }}

{{/* guardrail.bytes converts a Kubernetes memory quantity ("384Mi", "1G", "400000000")
or a GOMEMLIMIT ("320MiB") to a number of bytes, as a float. */}}
{{- define "guardrail.bytes" -}}
{{- $q := toString . -}}
{{- $m := regexFind "^[0-9.]+(e[0-9]+)?" $q -}}
{{- $unit := trimPrefix $m $q | trimSuffix "B" -}}
{{- $factor := dict "" 1 "k" 1e3 "K" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "Pi" 1125899906842624 "Ei" 1152921504606846976 -}}
{{- mulf (float64 $m) (get $factor $unit | default 1) -}}
{{- end }}

{{/* guardrail.validate refuses, naming the key, what values.schema.json cannot express. */}}
{{- define "guardrail.validate" -}}
{{- $limit := dig "limits" "memory" "" .Values.resources -}}
{{- if and $limit (ne (toString .Values.goMemLimit) "off") -}}
{{- if gt (include "guardrail.bytes" .Values.goMemLimit | float64) (include "guardrail.bytes" $limit | float64) -}}
{{- fail (printf "goMemLimit: %s is above resources.limits.memory (%s): the container would be OOM-killed before the Go runtime collects; set goMemLimit to about 85%% of the limit" .Values.goMemLimit (toString $limit)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.podDisruptionBudget.minAvailable -}}
{{- if and (not (kindIs "string" .)) (ge (int .) (int $.Values.replicas)) $.Values.podDisruptionBudget.enabled (gt (int $.Values.replicas) 1) -}}
{{- fail (printf "podDisruptionBudget.minAvailable: %d of %d replicas would block every node drain; leave at least one to evict" (int .) (int $.Values.replicas)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.webhook.hostNetwork .Values.networkPolicy.enabled -}}
{{- fail "networkPolicy.enabled: NetworkPolicies do not apply to pods on the host network (webhook.hostNetwork); disable one of them" -}}
{{- end -}}
{{- end }}

{{/* guardrail.selectorWith adds the extra matchLabels and matchExpressions of extra to
the label selector sel (a dict, changed in place). */}}
{{- define "guardrail.selectorWith" -}}
{{- $sel := index . 0 -}}
{{- $extra := index . 1 -}}
{{- with $extra.matchLabels -}}
{{- $_ := set $sel "matchLabels" (merge (dict) (get $sel "matchLabels" | default dict) .) -}}
{{- end -}}
{{- with $extra.matchExpressions -}}
{{- $_ := set $sel "matchExpressions" (concat (get $sel "matchExpressions" | default list) .) -}}
{{- end -}}
{{- end }}
