{{- /*
randomsecret-lib: the versioned Secret name of a RandomSecret, computed the way
`randomsecret name` does (docs/src/rotation.md#how-names-are-computed), for charts and
for Fleet, whose kustomize runs no functions.

  {{ include "randomsecret.versionedName" (dict "name" "db-creds" "spec" .Values.dbCreds) }}

"name" is the RandomSecret's metadata.name, "spec" its spec (render the
RandomSecret from the same values, so both always agree). Limits: lengths must
be whole numbers; rotateEvery names depend on time and fail here; values are
taken as Helm parsed them (YAML 1.1), exactly as the RandomSecret is rendered.
A field the CRD does not have fails the render, as `randomsecret name` fails:
"randomsecret-lib: RandomSecret db: unknown field spec.rotaton: did you mean
spec.rotation?" (the apiserver would refuse it, or with --validate=false
prune it in silence, and the name would not be the cluster's).
*/ -}}

{{- /*
The fields a spec may have: generated from the CRD schema by
src/gitops/fields.rs (helm_spec_fields), whose test fails, printing the new
list, when this one differs. Each node: "fields" (an object's fields), "values"
(a map's values) or "items" (a list's items); {} is not looked into.
*/ -}}
{{- define "randomsecret.specFields" -}}
fields:
  history: {}
  key: {}
  keys:
    values:
      fields:
        bytes:
          fields:
            encoding: {}
            length: {}
        certificate:
          fields:
            caCertificate: {}
            commonName: {}
            dnsNames: {}
            duration: {}
            ipAddresses: {}
            isCA: {}
            issuer: {}
            keyAlgorithm: {}
            keySize: {}
            privateKey: {}
            usages: {}
        charset: {}
        htpasswd:
          fields:
            algorithm: {}
            cost: {}
            passwordFrom: {}
            username: {}
        length: {}
        minDigits: {}
        minLower: {}
        minSymbols: {}
        minUpper: {}
        previous: {}
        privateKey:
          fields:
            algorithm: {}
            encoding: {}
            publicKey: {}
            size: {}
        rotateEvery: {}
        rotation: {}
        signingKey:
          fields:
            algorithm: {}
            jwksKey: {}
            keep: {}
        sshKeyPair:
          fields:
            bits: {}
            comment: {}
            publicKey: {}
            type: {}
        symbolCharacters: {}
        symbols: {}
        template: {}
        uuid:
          fields: {}
  length: {}
  push:
    fields:
      clusters:
        items:
          fields:
            connectionRef:
              fields:
                name: {}
            deletionPolicy: {}
            namespace: {}
      vault:
        fields:
          connectionRef:
            fields:
              kind: {}
              name: {}
          deletionPolicy: {}
          keyPrefix: {}
          keys: {}
          path: {}
  rotateEvery: {}
  rotation: {}
  secretAnnotations: {}
  secretLabels: {}
  secretName: {}
  specialChar: {}
  static: {}
  type: {}
{{- end -}}

{{- /* Fails on the first field of .value (in key order) that .node does not have. */ -}}
{{- define "randomsecret.checkFields" -}}
{{- $ctx := . -}}
{{- $node := .node -}}
{{- if and (hasKey $node "fields") (kindIs "map" .value) -}}
{{-   range $k, $v := .value -}}
{{-     $path := printf "%s.%s" $ctx.path $k -}}
{{-     if hasKey $node.fields $k -}}
{{-       include "randomsecret.checkFields" (dict "node" (get $node.fields $k) "value" $v "path" $path "name" $ctx.name) -}}
{{-     else -}}
{{-       $near := include "randomsecret.nearest" (dict "name" $k "candidates" (keys $node.fields | sortAlpha)) -}}
{{-       $hint := "" -}}
{{-       if $near }}{{ $hint = printf ": did you mean %s.%s?" $ctx.path $near }}{{ end -}}
{{-       fail (printf "randomsecret-lib: RandomSecret %s: unknown field %s%s" $ctx.name $path $hint) -}}
{{-     end -}}
{{-   end -}}
{{- end -}}
{{- if and (hasKey $node "values") (kindIs "map" .value) -}}
{{-   range $k, $v := .value -}}
{{-     include "randomsecret.checkFields" (dict "node" $node.values "value" $v "path" (printf "%s.%s" $ctx.path $k) "name" $ctx.name) -}}
{{-   end -}}
{{- end -}}
{{- if and (hasKey $node "items") (kindIs "slice" .value) -}}
{{-   range $i, $v := .value -}}
{{-     include "randomsecret.checkFields" (dict "node" $node.items "value" $v "path" (printf "%s[%d]" $ctx.path $i) "name" $ctx.name) -}}
{{-   end -}}
{{- end -}}
{{- end -}}

{{- /*
The nearest of .candidates (sorted) to .name, or nothing: as
`randomsecret name` chooses it (src/gitops/fields.rs, nearest): the smallest
distance (randomsecret.distance), at most a third of the candidate's length
(at least 1), the first among equals.
*/ -}}
{{- define "randomsecret.nearest" -}}
{{- $name := .name -}}
{{- $best := "" -}}
{{- $bestDistance := 0 -}}
{{- range $c := .candidates -}}
{{-   $d := include "randomsecret.distance" (list $name $c) | atoi -}}
{{-   if le $d (max 1 (div (len $c) 3) | int) -}}
{{-     if or (eq $best "") (lt $d $bestDistance) -}}
{{-       $best = $c -}}
{{-       $bestDistance = $d -}}
{{-     end -}}
{{-   end -}}
{{- end -}}
{{- $best -}}
{{- end -}}

{{- /*
The optimal-string-alignment distance of two strings, ignoring case (an
insertion, a deletion, a substitution or two neighbours swapped count 1), on
bytes: strsim::osa_distance of the Rust CLI, for ASCII field names.
*/ -}}
{{- define "randomsecret.distance" -}}
{{- $a := lower (index . 0) -}}
{{- $b := lower (index . 1) -}}
{{- $before := list -}}
{{- $prev := until (add1 (len $b) | int) -}}
{{- range $i := until (len $a) -}}
{{-   $ca := substr $i (add1 $i | int) $a -}}
{{-   $row := list (add1 $i) -}}
{{-   range $j := until (len $b) -}}
{{-     $cb := substr $j (add1 $j | int) $b -}}
{{-     $cost := 1 -}}
{{-     if eq $ca $cb }}{{ $cost = 0 }}{{ end -}}
{{-     $d := min (add1 (index $prev (add1 $j | int))) (add1 (index $row $j)) (add (index $prev $j) $cost) -}}
{{-     if and (gt $i 0) (gt $j 0) -}}
{{-       if and (eq $ca (substr (sub $j 1 | int) $j $b)) (eq (substr (sub $i 1 | int) $i $a) $cb) -}}
{{-         $d = min $d (add1 (index $before (sub $j 1 | int))) -}}
{{-       end -}}
{{-     end -}}
{{-     $row = append $row $d -}}
{{-   end -}}
{{-   $before = $prev -}}
{{-   $prev = $row -}}
{{- end -}}
{{- last $prev -}}
{{- end -}}

{{- define "randomsecret.canonicalString" -}}
{{- printf "%d:%s" (len .) . -}}
{{- end -}}

{{- /*
The bits of an sshKeyPair (or the size of a privateKey) with its default by
.algorithm: ecdsa 256, rsa 3072; ed25519 has none (0) and must leave it unset.
*/ -}}
{{- define "randomsecret.keyBits" -}}
{{- $defaults := dict "ed25519" 0 "ecdsa" 256 "rsa" 3072 -}}
{{- if not (hasKey $defaults .algorithm) -}}
{{-   fail (printf "randomsecret-lib: RandomSecret %s: %s must be ed25519, ecdsa or rsa, got %s" .name .algorithmPath .algorithm) -}}
{{- end -}}
{{- $bits := get $defaults .algorithm -}}
{{- if and .set (not (kindIs "invalid" .value)) -}}
{{-   if eq .algorithm "ed25519" }}{{ fail (printf "randomsecret-lib: RandomSecret %s: %s is not for ed25519 (leave it unset), got %v" .name .path .value) }}{{ end -}}
{{-   if or (not (or (kindIs "float64" .value) (kindIs "int64" .value) (kindIs "int" .value))) (ne (float64 .value) (float64 (int64 .value))) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: %s must be a whole number, got %v" .name .path .value) }}{{ end -}}
{{-   $bits = int64 .value -}}
{{- end -}}
{{- $bits -}}
{{- end -}}

{{- /* Derived kinds (htpasswd, template) change when their inputs do: no previous, no rotation. */ -}}
{{- define "randomsecret.underived" -}}
{{- if .previous }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.previous is not for %s: it changes when its inputs do" .name .key .kind) }}{{ end -}}
{{- if .rotation }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.rotation is not for %s: it changes when its inputs do" .name .key .kind) }}{{ end -}}
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
{{-   $rotation := toString (default "" $g.rotation) -}}
{{-   $m := dict "minDigits" 0 "minLower" 0 "minUpper" 0 "minSymbols" 0 -}}
{{-   range $field := keys $m -}}
{{-     if hasKey $g $field -}}
{{-       $n := get $g $field -}}
{{-       if ne (float64 $n) (float64 (int64 $n)) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.%s must be a whole number, got %v" $.name $key $field $n) }}{{ end -}}
{{-       $_ := set $m $field (int64 $n) -}}
{{-     end -}}
{{-   end -}}
{{-   $min := list $m.minDigits $m.minLower $m.minUpper $m.minSymbols -}}
{{-   $_ := set $gen $key (dict "length" $g.length "charset" (default "alphanumeric" $g.charset) "symbols" $symbols "min" $min "previous" $previous "rotation" $rotation) -}}
{{-   if hasKey $g "bytes" -}}
{{-     $_ := set $gen $key (dict "bytes" (dict "length" $g.bytes.length "encoding" (toString (default "base64" $g.bytes.encoding))) "previous" $previous "rotation" $rotation) -}}
{{-   end -}}
{{-   if hasKey $g "uuid" -}}
{{-     $_ := set $gen $key (dict "uuid" true "previous" $previous "rotation" $rotation) -}}
{{-   end -}}
{{-   if hasKey $g "signingKey" -}}
{{-     $keep := 1 -}}
{{-     if hasKey $g.signingKey "keep" }}{{ $keep = $g.signingKey.keep }}{{ end -}}
{{-     $_ := set $gen $key (dict "signingKey" (dict "algorithm" (toString $g.signingKey.algorithm) "keep" $keep "jwksKey" (toString (default "jwks.json" $g.signingKey.jwksKey))) "previous" $previous "rotation" $rotation) -}}
{{-   end -}}
{{-   if and (hasKey $g "sshKeyPair") (not (kindIs "invalid" $g.sshKeyPair)) -}}
{{-     $s := $g.sshKeyPair -}}
{{-     if $previous }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.previous is not for an sshKeyPair" $.name $key) }}{{ end -}}
{{-     $type := toString (default "ed25519" $s.type) -}}
{{-     $bits := include "randomsecret.keyBits" (dict "name" $.name "path" (printf "spec.keys.%s.sshKeyPair.bits" $key) "algorithm" $type "algorithmPath" (printf "spec.keys.%s.sshKeyPair.type" $key) "value" $s.bits "set" (hasKey $s "bits")) -}}
{{-     $_ := set $gen $key (dict "sshKeyPair" (dict "type" $type "bits" $bits "comment" (toString (default "" $s.comment)) "publicKey" (toString (default (printf "%s.pub" $key) $s.publicKey))) "rotation" $rotation) -}}
{{-   end -}}
{{-   if and (hasKey $g "certificate") (not (kindIs "invalid" $g.certificate)) -}}
{{-     $c := $g.certificate -}}
{{-     if $previous }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.previous is not for a certificate" $.name $key) }}{{ end -}}
{{-     $isCA := and (hasKey $c "isCA") $c.isCA -}}
{{-     $algorithm := toString (default "ecdsa" $c.keyAlgorithm) -}}
{{-     $size := include "randomsecret.keyBits" (dict "name" $.name "path" (printf "spec.keys.%s.certificate.keySize" $key) "algorithm" $algorithm "algorithmPath" (printf "spec.keys.%s.certificate.keyAlgorithm" $key) "value" $c.keySize "set" (hasKey $c "keySize")) -}}
{{-     $usages := list "digitalSignature" "keyEncipherment" "serverAuth" -}}
{{-     if $isCA }}{{ $usages = list "certSign" "crlSign" "digitalSignature" }}{{ end -}}
{{-     if and (hasKey $c "usages") (not (kindIs "invalid" $c.usages)) }}{{ $usages = $c.usages }}{{ end -}}
{{-     $duration := "2160h" -}}
{{-     if $isCA }}{{ $duration = "87600h" }}{{ end -}}
{{-     if $c.duration }}{{ $duration = toString $c.duration }}{{ end -}}
{{-     $privateKey := printf "%s.key" $key -}}
{{-     if and (hasSuffix ".crt" $key) (ne $key ".crt") }}{{ $privateKey = printf "%s.key" (trimSuffix ".crt" $key) }}{{ end -}}
{{-     if $c.privateKey }}{{ $privateKey = toString $c.privateKey }}{{ end -}}
{{-     $_ := set $gen $key (dict "certificate" (dict "ca" $isCA "issuer" (toString (default "" $c.issuer)) "commonName" (toString (default "" $c.commonName)) "dnsNames" (default list $c.dnsNames) "ipAddresses" (default list $c.ipAddresses) "usages" (sortAlpha $usages | join ",") "duration" $duration "algorithm" $algorithm "size" $size "privateKey" $privateKey "caCertificate" (toString (default "" $c.caCertificate))) "rotation" $rotation) -}}
{{-   end -}}
{{-   if and (hasKey $g "privateKey") (not (kindIs "invalid" $g.privateKey)) -}}
{{-     $p := $g.privateKey -}}
{{-     if $previous }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.previous is not for a privateKey" $.name $key) }}{{ end -}}
{{-     if not $p.algorithm }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.privateKey.algorithm is required (ed25519, ecdsa or rsa)" $.name $key) }}{{ end -}}
{{-     $algorithm := toString $p.algorithm -}}
{{-     $size := include "randomsecret.keyBits" (dict "name" $.name "path" (printf "spec.keys.%s.privateKey.size" $key) "algorithm" $algorithm "algorithmPath" (printf "spec.keys.%s.privateKey.algorithm" $key) "value" $p.size "set" (hasKey $p "size")) -}}
{{-     $encoding := toString (default "pkcs8" $p.encoding) -}}
{{-     if not (has $encoding (list "pkcs8" "pkcs1" "sec1")) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.privateKey.encoding must be pkcs8, pkcs1 or sec1, got %s" $.name $key $encoding) }}{{ end -}}
{{-     if and (eq $encoding "pkcs1") (ne $algorithm "rsa") }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.privateKey.encoding pkcs1 is for rsa only, the algorithm is %s" $.name $key $algorithm) }}{{ end -}}
{{-     if and (eq $encoding "sec1") (ne $algorithm "ecdsa") }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.privateKey.encoding sec1 is for ecdsa only, the algorithm is %s" $.name $key $algorithm) }}{{ end -}}
{{-     $_ := set $gen $key (dict "privateKey" (dict "algorithm" $algorithm "size" $size "encoding" $encoding "publicKey" (toString (default (printf "%s.pub" $key) $p.publicKey))) "rotation" $rotation) -}}
{{-   end -}}
{{-   if and (hasKey $g "htpasswd") (not (kindIs "invalid" $g.htpasswd)) -}}
{{-     $h := $g.htpasswd -}}
{{-     include "randomsecret.underived" (dict "name" $.name "key" $key "kind" "an htpasswd" "previous" $previous "rotation" $rotation) -}}
{{-     $algorithm := toString (default "bcrypt" $h.algorithm) -}}
{{-     if ne $algorithm "bcrypt" }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.htpasswd.algorithm must be bcrypt, got %s" $.name $key $algorithm) }}{{ end -}}
{{-     $cost := 10 -}}
{{-     if and (hasKey $h "cost") (not (kindIs "invalid" $h.cost)) -}}
{{-       $cost = $h.cost -}}
{{-       if or (not (or (kindIs "float64" $cost) (kindIs "int64" $cost) (kindIs "int" $cost))) (ne (float64 $cost) (float64 (int64 $cost))) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.htpasswd.cost must be a whole number, got %v" $.name $key $cost) }}{{ end -}}
{{-     end -}}
{{-     if not $h.username }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.htpasswd.username is required" $.name $key) }}{{ end -}}
{{-     if not $h.passwordFrom }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.htpasswd.passwordFrom is required (a key of keys with length)" $.name $key) }}{{ end -}}
{{-     $_ := set $gen $key (dict "htpasswd" (dict "algorithm" $algorithm "cost" (int64 $cost) "username" (toString $h.username) "passwordFrom" (toString $h.passwordFrom))) -}}
{{-   end -}}
{{-   if and (hasKey $g "template") (not (kindIs "invalid" $g.template)) -}}
{{-     include "randomsecret.underived" (dict "name" $.name "key" $key "kind" "a template" "previous" $previous "rotation" $rotation) -}}
{{-     if not (kindIs "string" $g.template) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.template must be a string, got %v" $.name $key $g.template) }}{{ end -}}
{{-     $_ := set $gen $key (dict "template" $g.template) -}}
{{-   end -}}
{{- end -}}
randomsecret.io/v1
type:{{ include "randomsecret.canonicalString" (default "Opaque" $spec.type) }}
rotation:{{ include "randomsecret.canonicalString" (toString (default "" $spec.rotation)) }}
{{ range $key := keys $gen | sortAlpha -}}
{{-   $g := get $gen $key -}}
{{-   if hasKey $g "signingKey" -}}
{{-     $s := $g.signingKey -}}
{{-     if ne (float64 $s.keep) (float64 (int64 $s.keep)) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.signingKey.keep must be a whole number, got %v" $.name $key $s.keep) }}{{ end -}}
generate:{{ include "randomsecret.canonicalString" $key }}:signingKey:{{ $s.algorithm }}:{{ int64 $s.keep }}:{{ include "randomsecret.canonicalString" $s.jwksKey }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else if hasKey $g "sshKeyPair" -}}
{{-     $s := $g.sshKeyPair -}}
generate:{{ include "randomsecret.canonicalString" $key }}:sshKeyPair:{{ $s.type }}:{{ $s.bits }}:{{ include "randomsecret.canonicalString" $s.comment }}:{{ include "randomsecret.canonicalString" $s.publicKey }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else if hasKey $g "certificate" -}}
{{-     $c := $g.certificate -}}
generate:{{ include "randomsecret.canonicalString" $key }}:certificate:{{ ternary "ca" "leaf" $c.ca }}:{{ include "randomsecret.canonicalString" $c.issuer }}:{{ include "randomsecret.canonicalString" $c.commonName }}:{{ len $c.dnsNames }}{{ range $c.dnsNames }}:{{ include "randomsecret.canonicalString" (toString .) }}{{ end }}:{{ len $c.ipAddresses }}{{ range $c.ipAddresses }}:{{ include "randomsecret.canonicalString" (toString .) }}{{ end }}:{{ $c.usages }}:{{ include "randomsecret.canonicalString" $c.duration }}:{{ $c.algorithm }}:{{ $c.size }}:{{ include "randomsecret.canonicalString" $c.privateKey }}:{{ include "randomsecret.canonicalString" $c.caCertificate }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else if hasKey $g "privateKey" -}}
{{-     $p := $g.privateKey -}}
generate:{{ include "randomsecret.canonicalString" $key }}:privateKey:{{ $p.algorithm }}:{{ $p.size }}:{{ $p.encoding }}:{{ include "randomsecret.canonicalString" $p.publicKey }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else if hasKey $g "htpasswd" -}}
{{-     $h := $g.htpasswd -}}
generate:{{ include "randomsecret.canonicalString" $key }}:htpasswd:{{ $h.algorithm }}:{{ $h.cost }}:{{ include "randomsecret.canonicalString" $h.username }}:{{ include "randomsecret.canonicalString" $h.passwordFrom }}
{{   else if hasKey $g "template" -}}
generate:{{ include "randomsecret.canonicalString" $key }}:template:{{ include "randomsecret.canonicalString" $g.template }}
{{   else if hasKey $g "bytes" -}}
{{-     $length := $g.bytes.length -}}
{{-     if ne (float64 $length) (float64 (int64 $length)) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.bytes.length must be a whole number, got %v" $.name $key $length) }}{{ end -}}
generate:{{ include "randomsecret.canonicalString" $key }}:bytes:{{ int64 $length }}:{{ $g.bytes.encoding }}{{ if $g.previous }}:previous{{ end }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else if hasKey $g "uuid" -}}
generate:{{ include "randomsecret.canonicalString" $key }}:uuid{{ if $g.previous }}:previous{{ end }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   else -}}
{{-   $length := $g.length -}}
{{-   if ne (float64 $length) (float64 (int64 $length)) }}{{ fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.length must be a whole number, got %v" $.name $key $length) }}{{ end -}}
{{-   $min := $g.min | default (list 0 0 0 0) -}}
generate:{{ include "randomsecret.canonicalString" $key }}:{{ int64 $length }}:{{ $g.charset }}:{{ include "randomsecret.canonicalString" $g.symbols }}{{ if gt (add (index $min 0) (index $min 1) (index $min 2) (index $min 3)) 0 }}:min:{{ index $min 0 }}:{{ index $min 1 }}:{{ index $min 2 }}:{{ index $min 3 }}{{ end }}{{ if $g.previous }}:previous{{ end }}{{ if $g.rotation }}:rotation:{{ include "randomsecret.canonicalString" $g.rotation }}{{ end }}
{{   end -}}
{{ end -}}
{{- $static := $spec.static | default dict -}}
{{- range $key := keys $static | sortAlpha -}}
static:{{ include "randomsecret.canonicalString" $key }}:{{ include "randomsecret.canonicalString" (toString (get $static $key)) }}
{{ end -}}
{{- end -}}

{{- define "randomsecret.versionedName" -}}
{{- $spec := .spec | default dict -}}
{{- include "randomsecret.checkFields" (dict "node" (include "randomsecret.specFields" . | fromYaml) "value" $spec "path" "spec" "name" .name) -}}
{{- if hasKey $spec "rotateEvery" -}}
{{-   fail (printf "randomsecret-lib: RandomSecret %s: spec.rotateEvery makes the name depend on time: it cannot be computed offline (read status.secretName instead)" .name) -}}
{{- end -}}
{{- range $key, $g := ($spec.keys | default dict) -}}
{{-   if hasKey $g "rotateEvery" -}}
{{-     fail (printf "randomsecret-lib: RandomSecret %s: spec.keys.%s.rotateEvery makes the name depend on time: it cannot be computed offline (read status.secretName instead)" $.name $key) -}}
{{-   end -}}
{{- end -}}
{{- $hash := include "randomsecret.canonical" . | sha256sum | trunc 10 -}}
{{- $hash = $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" -}}
{{- printf "%s-%s" (default .name $spec.secretName) $hash -}}
{{- end -}}
