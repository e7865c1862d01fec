{{/* The namespace of every namespaced object: the release's (chaoskit-system, where the CLI looks). */}}
{{- define "chaoskit.namespace" -}}
{{ .Release.Namespace | default "chaoskit-system" }}
{{- end }}

{{/* chaoskit's own labels on an object named .name, then Helm's standard ones. */}}
{{- define "chaoskit.labels" -}}
{{- if .name }}app.kubernetes.io/name: {{ .name }}
{{ end -}}
app.kubernetes.io/part-of: chaoskit
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "chaoskit.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}
{{- end }}

{{/* The Secret a pod mounts: the name the hook issues, or the pre-created one (tls.create=false). */}}
{{- define "chaoskit.secret" -}}
{{- if .ctx.Values.tls.create }}
{{- printf "chaoskit-%s-tls" .of }}
{{- else }}
{{- index .ctx.Values.tls.existingSecrets .of }}
{{- end }}
{{- end }}
