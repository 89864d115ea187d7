{{- define "randomsecret.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "randomsecret.serviceAccountName" -}}
{{- default (include "randomsecret.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "randomsecret.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "randomsecret.labels" -}}
{{ include "randomsecret.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "randomsecret.webhookCertSecret" -}}
{{- default (printf "%s-webhook-tls" (include "randomsecret.fullname" .)) .Values.webhook.certSecret -}}
{{- end -}}

{{- define "randomsecret.webhookCaSecret" -}}
{{- default (printf "%s-webhook-ca" (include "randomsecret.fullname" .)) .Values.webhook.caSecret -}}
{{- end -}}

{{- define "randomsecret.webhookService" -}}
{{- printf "%s-webhook" (include "randomsecret.fullname" .) -}}
{{- end -}}

{{- /* The namespaces annotation mode leaves alone (both paths), as a list. */ -}}
{{- define "randomsecret.annotationExcluded" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.webhook.excludeNamespaces | uniq | toJson -}}
{{- end -}}
