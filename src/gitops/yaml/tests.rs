use super::go::*;
use super::limits::*;
use super::stream::*;
use super::*;
use serde_json::{Value, json};

fn one(yaml: &str) -> Value {
    read::<Value>(yaml).unwrap()
}

/// What a plain (or quoted) scalar reads as, in a value and in a key.
fn value(scalar: &str) -> Result<Value, Error> {
    read::<Value>(&format!("k: {scalar}\n")).map(|v| v["k"].clone())
}
fn key(scalar: &str) -> Result<String, Error> {
    let v = read::<Value>(&format!("{scalar}: v\n"))?;
    Ok(v.as_object().unwrap().keys().next().unwrap().clone())
}

#[test]
fn streams_skip_empty_documents_and_keep_order() {
    let docs = read_stream("a: 1\n---\n---\n~\n---\nb: [x, {c: d}]\n...\n").unwrap();
    assert_eq!(docs, [json!({"a": 1}), json!({"b": ["x", {"c": "d"}]})]);
    assert!(read_stream("").unwrap().is_empty());
    assert!(read_stream("# only a comment\n").unwrap().is_empty());
    assert_eq!(one(""), Value::Null);
    assert!(read::<Value>("a: 1\n---\nb: 2\n").is_err());
    let keys: Vec<String> = one("z: 1\na: 2\nm: 3\n")
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["z", "a", "m"], "key order kept");
}

/// Found by fuzzing (`fuzz/`, target resolve): a tagged empty document
/// (`!1`) read as null but was kept, so `resolve` wrote `null` for it,
/// which its next run skipped.
#[test]
fn tagged_null_documents_are_skipped_too() {
    assert!(read_stream("!1").unwrap().is_empty());
    assert_eq!(
        read_stream("!x\n---\na: 1\n--- !!null\n").unwrap(),
        [json!({"a": 1})]
    );
}

/// Plain scalars as kubectl (Go's YAML 1.1 reader) reads them; quoted, a string.
#[test]
fn plain_scalars_read_as_kubectl_reads_them() {
    let cases = [
        ("on", json!(true)),
        ("On", json!(true)),
        ("yes", json!(true)),
        ("YES", json!(true)),
        ("y", json!(true)),
        ("Y", json!(true)),
        ("true", json!(true)),
        ("True", json!(true)),
        ("n", json!(false)),
        ("no", json!(false)),
        ("off", json!(false)),
        ("OFF", json!(false)),
        ("FALSE", json!(false)),
        // Spellings Go does not take for booleans stay strings.
        ("yEs", json!("yEs")),
        ("oN", json!("oN")),
        ("tRuE", json!("tRuE")),
        ("1_000", json!(1000)),
        ("017", json!(15)),
        ("0644", json!(420)),
        ("0o17", json!(15)),
        ("0x1F", json!(31)),
        ("1e3", json!(1000.0)),
        ("1.5", json!(1.5)),
        ("2024-01-01", json!("2024-01-01")),
        (
            "2001-12-14t21:59:43.10-05:00",
            json!("2001-12-14t21:59:43.10-05:00"),
        ),
        ("12:30", json!("12:30")),
        ("~", json!(null)),
        ("null", json!(null)),
        ("", json!(null)),
    ];
    for (plain, want) in cases {
        assert_eq!(value(plain).unwrap(), want, "plain {plain:?}");
        if !plain.is_empty() {
            assert_eq!(
                value(&format!("'{plain}'")).unwrap(),
                json!(plain),
                "quoted {plain:?}"
            );
            assert_eq!(
                value(&format!("\"{plain}\"")).unwrap(),
                json!(plain),
                "quoted {plain:?}"
            );
        }
    }
    // In flow collections, nested, and in a stream with quoted look-alikes.
    let v = one("a: [on, 'on', \"yes\", yes, {b: n, c: 'n'}]\nd: {e: [[off]]}\n");
    assert_eq!(
        v,
        json!({"a": [true, "on", "yes", true, {"b": false, "c": "n"}], "d": {"e": [[false]]}})
    );
}

#[test]
fn what_json_cannot_carry_is_refused() {
    for plain in [".inf", "-.inf", ".Inf", ".nan", ".NaN", "1e999"] {
        let e = value(plain).unwrap_err().to_string();
        assert!(
            e.contains("not a finite number") && e.contains("line 1, column 4"),
            "{plain}: {e}"
        );
    }
    assert_eq!(value("'.inf'").unwrap(), json!(".inf"));
    assert!(read::<Value>("~: x\n").is_err(), "a null key");
    assert!(read::<Value>("[a]: x\n").is_err(), "a sequence as key");
}

/// Keys stay strings as written; plain YAML 1.2 booleans and numbers become
/// their canonical string (as serde_yaml did, and as kubectl does for these).
#[test]
fn keys_are_strings() {
    let cases = [
        ("on", "on"),
        ("n", "n"),
        ("Yes", "Yes"),
        ("TRUE", "true"),
        ("False", "false"),
        ("'TRUE'", "TRUE"),
        ("0x1F", "31"),
        ("017", "15"),
        ("1_000", "1000"),
        ("+1", "1"),
        ("80", "80"),
        ("1.0", "1.0"),
        ("2024-01-01", "2024-01-01"),
        ("'0x1F'", "0x1F"),
        ("a.b/c", "a.b/c"),
    ];
    for (written, want) in cases {
        assert_eq!(key(written).unwrap(), want, "{written}");
    }
}

#[test]
fn merge_keys_merge_and_aliases_expand() {
    let v = one("base: &b {x: 1, y: 2}\nover:\n  <<: *b\n  y: 3\ncopy: *b\n");
    assert_eq!(v["over"], json!({"x": 1, "y": 3}));
    assert_eq!(v["copy"], json!({"x": 1, "y": 2}));
}

#[test]
fn duplicate_keys_are_refused() {
    let e = read::<Value>("a: 1\nb: 2\na: 3\n").unwrap_err().to_string();
    assert_eq!(e, "duplicate mapping key \"a\" at line 3, column 1");
}

/// Errors name the place and never echo the input, which may hold secret values.
#[test]
fn errors_name_the_line_without_echoing_the_input() {
    let e = read_stream("kind: Secret\nstringData:\n  password: hunter2\n  bad: [unclosed\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

/// Hostile nesting fails at once (serde_yaml took minutes on 100,000 `{a: `).
#[test]
fn deep_nesting_fails_fast_with_a_clear_error() {
    let inputs = [
        "[".repeat(100_000),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        "{a: ".repeat(100_000),
        (0..1_000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect(),
        (0..1_000)
            .map(|i| format!("{}-\n", " ".repeat(i)))
            .collect(),
    ];
    for input in inputs {
        let e = read_stream(&input).unwrap_err().to_string();
        assert!(e.contains("nested more than 128 levels deep"), "{e}");
    }
    // Up to the limit is fine, and writes back (on a test thread's stack).
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(read_stream(&ok).is_ok());
    let deep = (1..MAX_DEPTH).fold(json!({"a": "x"}), |v, _| json!([v]));
    assert_eq!(one(&write(&deep).unwrap()), deep);
}

#[test]
fn alias_expansion_is_bounded() {
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let started = std::time::Instant::now();
    let e = read_stream(&bomb).unwrap_err().to_string();
    assert!(
        e.starts_with("aliases expand to more than the input can hold"),
        "{e}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// A string stays a string for a YAML 1.1 reader (kubectl): anything it
/// could take for a boolean, a number, null or a timestamp is quoted.
#[test]
fn strings_that_look_like_something_else_are_quoted() {
    let strings = "on yes y Y n NO off true False tRuE 1_000 017 0644 0o17 0x1F 0X1F 1e3 .inf .nan \
        1e999 2024-01-01 12:30 ~ null << = 1_ +1 -0 0. .5";
    for s in strings.split_whitespace().chain([""]) {
        let out = write(&json!({"k": s})).unwrap();
        let text = out.strip_prefix("k: ").unwrap().trim_end();
        assert!(text.starts_with(['"', '\'']), "{s:?} written as {text}");
        assert_eq!(value(text).unwrap(), json!(s), "{s:?} read back");
    }
}

#[test]
fn values_round_trip() {
    let long = "word ".repeat(40);
    let json = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b c"}}"#;
    let strings = [
        long.as_str(),
        json,
        "multi\nline",
        "multi\nline\n",
        "multi\nline\n\n",
        "  leading\nx",
        "trail \nx",
        "tab\tin\nline",
        "a\r\nb",
        "\nstarts with a newline",
        "x\n  more indented\ny\n",
        "é€ß😀✓ <>&\"\\",
        "#!/bin/sh\necho $HOME # not a comment\n",
        "- a\n- b\n",
        "key: v",
        "--- x",
        "a\n---\nb",
        "\u{0}\u{1b}\u{7f}\u{85}\u{2028}",
        " ",
    ];
    for s in strings {
        let v = json!({"k": s, "seq": [s], "nested": {"a": {"b": s}}, s: 1});
        let back = one(&write(&v).unwrap());
        assert_eq!(back, v, "{s:?}");
    }
    let v = json!({"n": [0, -1, 1.5, 1e300, u64::MAX, i64::MIN], "b": [true, false], "z": null, "e": {}, "a": []});
    assert_eq!(one(&write(&v).unwrap()), v);
    let docs = [json!({"a": 1}), json!("s"), json!([1])];
    assert_eq!(read_stream(&write_stream(&docs).unwrap()).unwrap(), docs);
}

#[test]
fn go_reads_plain_scalars_like_yaml_v2() {
    let cases = [
        ("on", Go::Bool(true)),
        ("Y", Go::Bool(true)),
        ("NO", Go::Bool(false)),
        ("TRUE", Go::Bool(true)),
        ("tRuE", Go::Str),
        ("yEs", Go::Str),
        ("1_000", Go::Int(1000)),
        ("017", Go::Int(15)),
        ("-017", Go::Int(-15)),
        ("0o17", Go::Int(15)),
        ("0O17", Go::Int(15)),
        ("0x1F", Go::Int(31)),
        ("0X1F", Go::Int(31)),
        ("+0x1F", Go::Int(31)),
        ("0B101", Go::Int(5)),
        ("1_", Go::Int(1)),
        ("08", Go::Float(8.0)),
        ("1_0.5", Go::Float(10.5)),
        ("1e3", Go::Float(1000.0)),
        (".5", Go::Float(0.5)),
        ("+.5", Go::Float(0.5)),
        ("1.", Go::Float(1.0)),
        ("18446744073709551615", Go::Int(u64::MAX as i128)),
        ("18446744073709551616", Go::Float(18446744073709551616.0)),
        ("1e999", Go::Str),
        (".inf", Go::NotFinite),
        ("-.Inf", Go::NotFinite),
        ("2024-01-01", Go::Str),
        ("12:30", Go::Str),
        ("0x", Go::Str),
        ("-", Go::Str),
        ("--flag", Go::Str),
        ("v1.2.3", Go::Str),
        ("~", Go::Null),
        ("", Go::Null),
    ];
    for (s, want) in cases {
        assert_eq!(go_plain(s), want, "{s:?}");
    }
    // Keys, as `kubectl label --local -o json` prints them.
    let keys = [
        ("on", Some("true")),
        ("No", Some("false")),
        ("0x1F", Some("31")),
        ("1.0", Some("1")),
        ("1.5", Some("1.5")),
        ("1e3", Some("1000")),
        ("1e5", Some("100000")),
        ("123456.7", Some("123456.7")),
        ("1e6", Some("1e+06")),
        ("1.5e1_0", Some("1.5e+10")),
        ("0.0001", Some("0.0001")),
        ("0.00001", Some("1e-05")),
        ("3.4e39", Some(".inf")),
        ("9223372036854775808", None),
        ("null", None),
    ];
    for (s, want) in keys {
        assert_eq!(go_key(s).as_deref(), want, "{s:?}");
    }
}

/// Every plain scalar this module reads as Go does passes; the rest are
/// the spellings where they part.
#[test]
fn plain_scalars_kubectl_reads_otherwise_are_refused() {
    let agree = "on yes Y No OFF true False tRuE yEs 1_000 017 0644 0o17 0x1F 08 1e3 1.5 .5 -0 +1 \
        2024-01-01 12:30 ~ null --flag -x v1 1.2.3 10Gi 0.5Gi 100m '0X1F' \"1_\"";
    let agree = agree.split_whitespace();
    for s in agree {
        let doc = format!("a: {s}\nb: [{s}]\nc: {{d: {s}}}\n");
        assert!(
            check_plain_scalars(&doc).is_ok(),
            "{s}: {:?}",
            check_plain_scalars(&doc)
        );
    }
    for s in [
        "0X1F", "0O17", "0B101", "1_", "1__0", "+_1", "1_0.5", "1.5e1_0", "0_8",
    ] {
        let e = check_plain_scalars(&format!("a: x\nb: [{s}]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("plain value {s} (line 2, column 5)")),
            "{e}"
        );
        assert!(e.contains("to kubectl"), "{e}");
    }
    // Keys: kept as written (or YAML 1.2's canonical string), which is
    // what kubectl reads except for YAML 1.1 spellings and some numbers.
    for key in [
        "a", "TRUE", "true", "80", "1.5", "0x1F", "017", "1_000", "'on'", "\"y\"", "<<",
    ] {
        let doc = format!("{key}: x\n");
        let doc = if key == "<<" {
            "a: &a {b: 1}\nc: {<<: *a}\n".to_string()
        } else {
            doc
        };
        assert!(
            check_plain_scalars(&doc).is_ok(),
            "{key}: {:?}",
            check_plain_scalars(&doc)
        );
    }
    for (key, go) in [
        ("on", "\"true\""),
        ("y", "\"true\""),
        ("No", "\"false\""),
        ("1.0", "\"1\""),
        ("0X1F", "\"31\""),
    ] {
        let e = check_plain_scalars(&format!("x:\n  {key}: v\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "plain key {key} (line 2, column 3) means {go} to kubectl"
            )),
            "{e}"
        );
    }
}

/// The guarantee `resolve` stands on: a plain scalar (value or key) that
/// passes the check is written back meaning to kubectl what it meant.
#[test]
fn what_passes_the_check_means_the_same_to_kubectl_once_written() {
    let alphabet = [
        "0", "1", "8", "_", ".", "e", "x", "X", "o", "b", "+", "-", "y", "n",
    ];
    let mut tokens: Vec<String> = "on On ON yes YES y Y n N no off OFF true TRUE tRuE false \
        1_000 017 0644 0o17 0x1F 1e3 1E3 1.5 .5 -.5 +.5 1e-3 2024-01-01 2001-12-14t21:59:43.10-05:00 \
        12:30 1:20:30 ~ null Null NULL NaN Infinity 9223372036854775807 9223372036854775808 \
        18446744073709551615 18446744073709551616 -9223372036854775809 <<x = a 10Gi v1 \
        yEs oN nO 0X1F 0O17 0B101 0b101 -0b101 0o 0x 0X +0x1F -0x1F 0x_1F 1__0 +_1 1_0.5 1.5e1_0 \
        0_8 00 01_ 1e999 .inf"
        .split_whitespace()
        .map(String::from)
        .collect();
    // Every short spelling that starts like a number (others are strings for both).
    for a in ["0", "1", "8", ".", "+", "-"] {
        tokens.push(a.to_string());
        for b in alphabet {
            tokens.push(format!("{a}{b}"));
            for c in alphabet {
                tokens.push(format!("{a}{b}{c}"));
            }
        }
    }
    let kubectl_reads = |written: &str, key: bool| -> (Go, String) {
        if written.starts_with(['"', '\'']) {
            let s: String = read(written).unwrap();
            (Go::Str, s)
        } else if key {
            (Go::Str, go_key(written).unwrap_or_default())
        } else {
            (go_plain(written), written.to_string())
        }
    };
    let same = |a: (Go, String), b: (Go, String)| match (a.0, b.0) {
        (Go::Str, Go::Str) => a.1 == b.1,
        (Go::Int(x), Go::Float(y)) | (Go::Float(y), Go::Int(x)) => x as f64 == y,
        (x, y) => x == y,
    };
    let mut checked = 0;
    for t in &tokens {
        let input = format!("a: {t}\n");
        if let (Ok(docs), Ok(())) = (
            read_values(&input, 0),
            check_plain_scalars_here(&input, 0, false),
        ) {
            let out = write(&docs[0]).unwrap();
            let written = out.strip_prefix("a: ").unwrap().trim_end();
            let before = (go_plain(t), t.clone());
            assert!(
                same(kubectl_reads(written, false), before),
                "value {t:?} written as {written}"
            );
            checked += 1;
        }
        let input = format!("{t}: v\n");
        if let (Ok(docs), Ok(())) = (
            read_values(&input, 0),
            check_plain_scalars_here(&input, 0, false),
        ) {
            let out = write(&docs[0]).unwrap();
            let written = out.strip_suffix(": v\n").unwrap();
            let before = (Go::Str, go_key(t).unwrap_or_default());
            assert!(
                same(kubectl_reads(written, true), before),
                "key {t:?} written as {written}"
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");
}

/// A stream in documents: the ranges cover the text (the trailer aside),
/// empty documents included.
#[test]
fn documents_cover_the_stream() {
    let input = "# head\na: 1\n---\n# c\nb: 2\n...\n--- x\n---\n# tail\n";
    let stream = read_documents(input).unwrap();
    let values: Vec<_> = stream.docs.iter().map(|d| d.value.clone()).collect();
    assert_eq!(
        values,
        [
            Some(json!({"a": 1})),
            Some(json!({"b": 2})),
            Some(json!("x")),
            None
        ]
    );
    let joined: String = stream.docs.iter().map(|d| stream.text_of(d)).collect();
    assert_eq!(joined + stream.trailer(), input);
    assert_eq!(
        &input[stream.docs[1].body..stream.docs[1].range.end],
        "\n# c\nb: 2\n..."
    );
    // Errors in a later document name the line in the stream.
    let e = read_stream("a: 1\n---\nb: 2\n---\nc: [x\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 5") || e.contains("line 6"), "{e}");
    let e = read_stream("a: 1\n---\nb: 1\nb: 2\n")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "duplicate mapping key \"b\" at line 4, column 1");
}

/// kubectl skips a byte-order mark at the start of its input and of each
/// document; elsewhere it is an error.
#[test]
fn byte_order_marks_are_skipped_where_kubectl_skips_them() {
    let docs = read_stream("\u{feff}a: 1\n---\n\u{feff}b: 2\n--- # x\r\n\u{feff}c: 3\n").unwrap();
    assert_eq!(docs, [json!({"a": 1}), json!({"b": 2}), json!({"c": 3})]);
    assert!(read_stream("a: 1\n\u{feff}b: 2\n").is_err());
    assert!(
        read_stream("a: \"\u{feff}\"\n").is_ok(),
        "inside a string it is a character"
    );
}

#[test]
fn input_beyond_the_limit_is_refused_before_parsing() {
    let mut big = String::from("a: [");
    big.push_str(&"1,".repeat(MAX_INPUT / 2));
    big.push_str("1]\n");
    let started = std::time::Instant::now();
    let e = read_stream(&big).unwrap_err().to_string();
    assert!(e.contains("larger than 16 MiB"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

/// JSON (to kubectl) pairs surrogate escapes into one character and
/// takes a lone one for U+FFFD; its YAML reader refuses them. Here a
/// pair in a JSON stream is the character, a lone one an error, and
/// either in YAML fails the check.
#[test]
fn surrogate_escapes_read_as_kubectl_reads_them_or_fail() {
    let json = r#"{"kind": "ConfigMap", "data": {"a": "\ud83d\ude00", "b": "\\ud83d"}}"#;
    assert_eq!(one(json)["data"], json!({"a": "😀", "b": "\\ud83d"}));
    assert!(check_plain_scalars(json).is_ok());
    let e = read_stream(r#"{"a": "\ud83d"}"#).unwrap_err().to_string();
    assert!(e.contains("surrogate"), "{e}");
    let e = check_plain_scalars("kind: ConfigMap\ndata: {a: \"\\ud83d\\ude00\"}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 2, column 11") && e.contains("surrogate"),
        "{e}"
    );
    assert!(
        check_plain_scalars("a: \"\\\\ud83d \\u00e9\"\n").is_ok(),
        "an escaped backslash, é"
    );
}

/// A tag on a scalar: kubectl reads a custom one as the string written
/// and applies !!float to its own reading of the text.
#[test]
fn tags_where_the_readings_part_are_refused() {
    for ok in [
        "a: !!str 017",
        "a: !foo bar",
        "a: !foo '017'",
        "a: !!binary aGVsbG8=",
        "a: !!null ''",
        "a: !foo {b: 1}",
        "a: !!map {b: 1}",
        "!!str 1: x",
        "a: ! 12",
    ] {
        assert!(
            check_plain_scalars(ok).is_ok(),
            "{ok}: {:?}",
            check_plain_scalars(ok)
        );
    }
    for bad in [
        "a: !foo 017",
        "a: !foo yes",
        "!foo 017: x",
        "a: !!float 017",
        "a: !!int 1",
        "a: !<tag:yaml.org,2002:float> 1",
    ] {
        let e = check_plain_scalars(bad).unwrap_err().to_string();
        assert!(e.contains("tagged") && e.contains("line 1"), "{bad}: {e}");
    }
}
