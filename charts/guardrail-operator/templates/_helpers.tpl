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
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "guardrail.serviceAccount" -}}
guardrail-operator
{{- end }}
