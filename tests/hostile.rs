//! The hostile-input corpus of the CLI (issue 12, "Prove it"): every
//! `testdata/hostile/<surface>/<case>.yaml` is given to the real binary on
//! standard input, under a wall-clock limit and an address-space limit, and
//! must end as its `<case>.expect` says, never with a panic.
//!
//! `<case>.expect`, first line:
//! - `ok`: exit status 0; any further lines are the exact expected stdout;
//! - `error: <text>`: exit status 1, with `<text>` in stderr (or, for the
//!   KRM function, whose errors are also results, in stdout).
//!
//! The `crd` and `controller` surfaces need a cluster: `e2e/tests/hostile.rs`.
//!
//! A surface is one line in the list of tests below: its directory and the
//! command's arguments.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one case may run.
const TIME_LIMIT: Duration = Duration::from_secs(10);
/// The address space one case may use (virtual memory, so generous).
const MEMORY_LIMIT: libc::rlim_t = 1 << 30;

#[test]
fn name() {
    run_surface("name", &["name"], 15);
}

#[test]
fn resolve() {
    run_surface("resolve", &["resolve"], 25);
}

#[test]
fn kustomize() {
    run_surface("kustomize", &["kustomize"], 15);
}

/// `name --explain` prints fields of its input: none may reach the
/// terminal as an escape sequence.
#[test]
fn explain() {
    run_surface("explain", &["name", "--explain"], 3);
}

/// `diff OLD -`: each case is the new side, against a fixed old side.
#[test]
fn diff() {
    let old: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "testdata",
        "cli",
        "rotation-1.yaml",
    ]
    .iter()
    .collect();
    run_surface(
        "diff",
        &["diff", old.to_str().expect("a UTF-8 path"), "-"],
        3,
    );
}

/// The expected outcome of one case.
#[derive(Debug)]
enum Expect {
    Ok { stdout: Option<String> },
    Error(String),
}

fn parse_expect(path: &Path) -> Expect {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    match first.trim_end() {
        "ok" => Expect::Ok {
            stdout: (!rest.is_empty()).then(|| rest.to_string()),
        },
        line => match line.strip_prefix("error: ") {
            Some(want) if !want.is_empty() => Expect::Error(want.to_string()),
            _ => panic!(
                "{}: the first line must be `ok` or `error: <text>`, not {line:?}",
                path.display()
            ),
        },
    }
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary with `args` on `input`, killed after [`TIME_LIMIT`],
/// within [`MEMORY_LIMIT`] of address space.
fn run_bounded(args: &[&str], input: Vec<u8>) -> Result<Outcome, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_randomsecret"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("RUST_BACKTRACE", "0");
    let limit = libc::rlimit {
        rlim_cur: MEMORY_LIMIT,
        rlim_max: MEMORY_LIMIT,
    };
    // SAFETY: setrlimit is async-signal-safe, and the closure touches
    // nothing else between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd.spawn().map_err(|e| format!("spawning: {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin");
    // Threads for the pipes: a large input or output must not block the clock.
    let writer = std::thread::spawn(move || {
        // The process may exit before reading everything (a refusal): fine.
        let _ = stdin.write_all(&input);
    });
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = pipe(Box::new(child.stdout.take().expect("stdout")));
    let err = pipe(Box::new(child.stderr.take().expect("stderr")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {TIME_LIMIT:?}: killed"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    writer.join().map_err(|_| "stdin writer panicked")?;
    Ok(Outcome {
        code: status.code(),
        stdout: out.join().map_err(|_| "stdout reader panicked")?,
        stderr: err.join().map_err(|_| "stderr reader panicked")?,
    })
}

/// Checks one case; `Err` says how it failed.
fn check(args: &[&str], input: Vec<u8>, expect: &Expect) -> Result<(), String> {
    judge(&run_bounded(args, input)?, expect)
}

/// Whether an outcome is the expected one; `Err` says how it is not.
fn judge(out: &Outcome, expect: &Expect) -> Result<(), String> {
    if out.stderr.contains("panicked at") {
        return Err(format!("panicked: {}", out.stderr));
    }
    // Whatever the input holds, nothing printed drives the terminal: no
    // ESC, BEL or C1 control, no bidirectional override.
    let raw = |t: &str| {
        t.contains(|c: char| {
            matches!(c, '\x1b' | '\x07' | '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
    };
    if raw(&out.stdout) || raw(&out.stderr) {
        return Err(format!(
            "a raw control character in the output: stdout {:?}, stderr {:?}",
            out.stdout, out.stderr
        ));
    }
    match expect {
        Expect::Ok { stdout } => {
            if out.code != Some(0) {
                return Err(format!("exit {:?}, stderr: {}", out.code, out.stderr));
            }
            match stdout {
                Some(want) if *want != out.stdout => {
                    Err(format!("stdout {:?}, want {want:?}", out.stdout))
                }
                _ => Ok(()),
            }
        }
        Expect::Error(want) => {
            if out.code != Some(1) {
                return Err(format!(
                    "exit {:?} (want 1), stdout: {:?}, stderr: {}",
                    out.code, out.stdout, out.stderr
                ));
            }
            if !out.stderr.contains(want.as_str()) && !out.stdout.contains(want.as_str()) {
                return Err(format!(
                    "neither stderr {:?} nor stdout {:?} has {want:?}",
                    out.stderr, out.stdout
                ));
            }
            Ok(())
        }
    }
}

/// Every case of `testdata/hostile/<surface>/` against `randomsecret <args>`,
/// at least `min_cases` of them; fails listing each case that did not end as expected.
fn run_surface(surface: &str, args: &[&str], min_cases: usize) {
    let dir: PathBuf = [env!("CARGO_MANIFEST_DIR"), "testdata", "hostile", surface]
        .iter()
        .collect();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= min_cases,
        "{surface}: {} cases, want at least {min_cases}",
        cases.len()
    );
    let mut failures = vec![];
    for case in &cases {
        let expect = parse_expect(&case.with_extension("expect"));
        let input = std::fs::read(case).expect("the case");
        // After a byte-order mark, if the case is about one. A JSON case
        // (where `#` would make it YAML) says why in a field of its own.
        // A case about encodings (UTF-16, say) cannot carry a readable line.
        let text = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&input);
        assert!(
            text.starts_with(b"# ") || text.starts_with(b"{") || std::str::from_utf8(text).is_err(),
            "{}: the first line must say why the case is hostile (`# ...`)",
            case.display()
        );
        // The KRM function echoes its input: an expected error text found
        // there would prove nothing.
        if let Expect::Error(want) = &expect {
            assert!(
                !String::from_utf8_lossy(&input).contains(want.as_str()),
                "{}: the expected text {want:?} is in the input itself",
                case.display()
            );
        }
        if let Err(why) = check(args, input, &expect) {
            failures.push(format!("{}: {why}", case.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{surface}: {} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Input beyond the documented limit (16 MiB) is refused before it is
/// parsed (within the time limit): generated here rather than kept as a fixture.
#[test]
fn input_beyond_the_size_limit_is_refused() {
    let mut big = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: [".to_vec();
    big.extend(b"1,".repeat(17 << 19));
    big.extend(b"1]}\n");
    let expect = Expect::Error("larger than 16 MiB".into());
    for args in [
        &["resolve"][..],
        &["kustomize"],
        &["resolve", "-f", "-"],
        &["name"],
    ] {
        assert_eq!(check(args, big.clone(), &expect), Ok(()), "{args:?}");
    }
}

/// The judge itself: a panic and a wrong outcome are failures.
#[test]
fn the_judge_fails_what_it_should() {
    let out = |code: i32, stdout: &str, stderr: &str| Outcome {
        code: Some(code),
        stdout: stdout.into(),
        stderr: stderr.into(),
    };
    let ok = |stdout: Option<&str>| Expect::Ok {
        stdout: stdout.map(String::from),
    };
    let error = |text: &str| Expect::Error(text.into());
    let panicked = out(101, "", "thread 'main' panicked at src/x.rs");
    assert!(judge(&panicked, &error("x")).is_err());
    assert!(judge(&out(0, "a\n", ""), &ok(Some("b\n"))).is_err());
    assert!(judge(&out(0, "a\n", ""), &ok(Some("a\n"))).is_ok());
    assert!(judge(&out(0, "a\n", ""), &ok(None)).is_ok());
    assert!(judge(&out(2, "", ""), &ok(None)).is_err());
    assert!(judge(&out(1, "", "bad thing"), &error("good")).is_err());
    assert!(judge(&out(1, "", "bad thing"), &error("bad")).is_ok());
    assert!(judge(&out(2, "", "bad thing"), &error("bad")).is_err());
    assert!(judge(&out(0, "", ""), &error("bad")).is_err());
}

/// Issue 32: an unknown field named by megabytes is refused within the time
/// limit (the distance to each valid name is not computed for it: it took
/// half a minute), its name cut short in the error; generated here rather
/// than kept as a fixture.
#[test]
fn an_unknown_field_of_megabytes_is_refused_in_time() {
    let key = "rotation".repeat(1 << 19);
    let doc = format!(
        "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {{name: a}}\nspec:\n  length: 9\n  ? {key}\n  : x\n"
    );
    let list = format!(
        "kind: ResourceList\nitems:\n- apiVersion: randomsecret.io/v1\n  kind: RandomSecret\n  metadata: {{name: a}}\n  spec:\n    length: 9\n    ? {key}\n    : x\n"
    );
    let expect =
        Expect::Error("document 1: RandomSecret a: unknown field spec[\"rotationrotation".into());
    for (args, input) in [
        (&["name"][..], &doc),
        (&["resolve"], &doc),
        (&["kustomize"], &list),
    ] {
        assert_eq!(
            check(args, input.clone().into_bytes(), &expect),
            Ok(()),
            "{args:?}"
        );
        let out = run_bounded(args, input.clone().into_bytes()).unwrap();
        assert!(
            out.stderr.len() < 400,
            "{args:?}: {} bytes",
            out.stderr.len()
        );
    }
}
