{{- /*
randomsecret-lib: the versioned Secret name of a RandomSecret, computed the way
`randomsecret name` does (README: "How names are computed"), for charts and
for Fleet, whose kustomize runs no functions.

  {{ include "randomsecret.versionedName" (dict "name" "db-creds" "spec" .Values.dbCreds) }}

"name" is the RandomSecret's metadata.name, "spec" its spec (render the
RandomSecret from the same values, so both always agree). Limits: lengths must
be whole numbers; rotateEvery names depend on time and fail here; values are
taken as Helm parsed them (YAML 1.1), exactly as the RandomSecret is rendered.
*/ -}}

{{- define "randomsecret.canonicalString" -}}
{{- printf "%d:%s" (len .) . -}}
{{- end -}}

{{- define "randomsecret.canonical" -}}
{{- $spec := .spec | default dict -}}
{{- $defaultSymbols := "!@#$%^&*()-_=+[]{}|;:,.<>?/~`" -}}
{{- $gen := dict -}}
{{- if or (hasKey $spec "key") (hasKey $spec "length") (hasKey $spec "specialChar") -}}
{{-   $symbols := $defaultSymbols -}}
{{-   if and (hasKey $spec "specialChar") (not $spec.specialChar) }}{{ $symbols = "" }}{{ end -}}
{{-   $length := 32 -}}
{{-   if hasKey $spec "length" }}{{ $length = $spec.length }}{{ end -}}
{{-   $_ := set $gen (default "password" $spec.key) (dict "length" $length "charset" "alphanumeric" "symbols" $symbols) -}}
{{- end -}}
{{- range $key, $g := ($spec.keys | default dict) -}}
{{-   $on := hasKey $g "symbolCharacters" -}}
{{-   if hasKey $g "symbols" }}{{ $on = $g.symbols }}{{ end -}}
{{-   $symbols := "" -}}
{{-   if $on }}{{ $symbols = default $defaultSymbols $g.symbolCharacters }}{{ end -}}
{{-   $previous := and (hasKey $g "previous") $g.previous -}}
{{-   $_ := set $gen $key (dict "length" $g.length "charset" (default "alphanumeric" $g.charset) "symbols" $symbols "previous" $previous) -}}
{{- end -}}
randomsecret.io/v1
type:{{ include "randomsecret.canonicalString" (default "Opaque" $spec.type) }}
rotation:{{ include "randomsecret.canonicalString" (toString (default "" $spec.rotation)) }}
{{ range $key := keys $gen | sortAlpha -}}
{{-   $g := get $gen $key -}}
{{-   $length := $g.length -}}
{{-   if ne (float64 $length) (float64 (int64 $length)) }}{{ fail (printf "randomsecret-lib: keys.%s.length must be a whole number, got %v" $key $length) }}{{ end -}}
generate:{{ include "randomsecret.canonicalString" $key }}:{{ int64 $length }}:{{ $g.charset }}:{{ include "randomsecret.canonicalString" $g.symbols }}{{ if $g.previous }}:previous{{ end }}
{{ end -}}
{{- $static := $spec.static | default dict -}}
{{- range $key := keys $static | sortAlpha -}}
static:{{ include "randomsecret.canonicalString" $key }}:{{ include "randomsecret.canonicalString" (toString (get $static $key)) }}
{{ end -}}
{{- end -}}

{{- define "randomsecret.versionedName" -}}
{{- $spec := .spec | default dict -}}
{{- if hasKey $spec "rotateEvery" -}}
{{-   fail "randomsecret-lib: a RandomSecret with rotateEvery has a time-dependent name: read status.secretName instead" -}}
{{- end -}}
{{- $hash := include "randomsecret.canonical" . | sha256sum | trunc 10 -}}
{{- $hash = $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" -}}
{{- printf "%s-%s" (default .name $spec.secretName) $hash -}}
{{- end -}}
