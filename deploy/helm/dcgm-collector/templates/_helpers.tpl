{{/* The chart's name, and the name of its objects (release name, chart name unless the release holds it). */}}
{{- define "dcgm-collector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dcgm-collector.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dcgm-collector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dcgm-collector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dcgm-collector.labels" -}}
{{ include "dcgm-collector.selectorLabels" . }}
app.kubernetes.io/component: gpu-metrics
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "dcgm-collector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dcgm-collector.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Web config (TLS, basic auth) is on when either is given. */}}
{{- define "dcgm-collector.webConfig" -}}
{{- if or .Values.webConfig.tls.secretName .Values.webConfig.basicAuth.users }}true{{ end }}
{{- end }}

{{/* The path --dcgm-lib names: the mounted host directory, or a file in it. */}}
{{- define "dcgm-collector.dcgmLibrary" -}}
{{- with .Values.source.dcgmLibrary }}
{{- if .hostPath }}
{{- if .file }}/opt/dcgm/{{ .file }}{{ else }}/opt/dcgm{{ end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The collector's source flags, one YAML list item a line.  A wrong value stops
the render with one line naming the value and what it accepts.
*/}}
{{- define "dcgm-collector.sourceArgs" -}}
{{- $mode := .Values.source.mode }}
{{- $library := include "dcgm-collector.dcgmLibrary" . }}
{{- if eq $mode "auto" }}
{{- if $library }}
- --dcgm-lib
- {{ $library | quote }}
{{- end }}
{{- else if eq $mode "nvml" }}
{{- if .Values.source.hostengine }}
{{- fail "source.hostengine is set but source.mode is nvml: set source.mode=remote to use the hostengine" }}
{{- end }}
- --nvml
{{- else if eq $mode "dcgm" }}
{{- if not $library }}
{{- fail "source.mode=dcgm needs source.dcgmLibrary.hostPath: the image holds no libdcgm.so.4" }}
{{- end }}
- --dcgm-lib
- {{ $library | quote }}
{{- else if eq $mode "remote" }}
{{- if not .Values.source.hostengine }}
{{- fail "source.mode=remote needs source.hostengine (HOST:PORT, e.g. nvidia-dcgm.gpu-operator.svc:5555)" }}
{{- end }}
- -r
- {{ .Values.source.hostengine | quote }}
{{- if $library }}
- --dcgm-lib
- {{ $library | quote }}
{{- end }}
{{- else }}
{{- fail (printf "source.mode %q is not one of auto, nvml, dcgm, remote" (toString $mode)) }}
{{- end }}
{{- if and .Values.source.hostengine (ne $mode "remote") (ne $mode "nvml") }}
{{- fail (printf "source.hostengine is set but source.mode is %s: set source.mode=remote to use the hostengine" $mode) }}
{{- end }}
{{- end }}
