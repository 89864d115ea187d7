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

{{- /* The shards, as a JSON list: "" (the default shard) first, then each
of values shards, checked (a DNS label, not "default"). */ -}}
{{- define "randomsecret.shards" -}}
{{- range .Values.shards }}
{{- if or (not (regexMatch "^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$" .)) (eq . "default") }}
{{- fail (printf "shards: %q is not a shard name: use at most 32 lower-case letters, digits and '-' (not \"default\", the shard taking everything else)" .) }}
{{- end }}
{{- end }}
{{- prepend (.Values.shards | default list | uniq) "" | toJson -}}
{{- end -}}

{{- /* A shard's --shard-selector: (list root shard); "" is the default shard. */ -}}
{{- define "randomsecret.shardSelector" -}}
{{- $root := index . 0 }}{{- $shard := index . 1 -}}
{{- if $shard }}{{ $root.Values.shardKey }}={{ $shard }}{{ else }}!{{ $root.Values.shardKey }}{{ end -}}
{{- end -}}

{{- /* The Leases of the controllers, as a JSON list: a shard's is the
controller's (crate::shard::Shard::lease) name and the first 8 hex digits
of the SHA-256 of its selector. */ -}}
{{- define "randomsecret.leases" -}}
{{- $full := include "randomsecret.fullname" . -}}
{{- if .Values.shards -}}
{{- $out := list -}}
{{- range $shard := include "randomsecret.shards" $ | fromJsonArray -}}
{{- $out = append $out (printf "%s-%s" $full (include "randomsecret.shardSelector" (list $ $shard) | sha256sum | trunc 8)) -}}
{{- end -}}
{{- $out | toJson -}}
{{- else -}}
{{- list $full | toJson -}}
{{- end -}}
{{- end -}}
