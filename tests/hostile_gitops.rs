//! Hostile input for `randomsecret resolve` and `randomsecret kustomize`:
//! every fixture of `testdata/hostile/{resolve,kustomize}/` runs through the
//! real binary under a wall-clock timeout and an address-space limit, and
//! must end as its `.expect` file says: `ok` (then, optionally, the exact
//! stdout on the following lines) or `error: <text>` (a non-zero exit, the
//! text in stdout or stderr). Never a panic, never a hang.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(10);
/// Address space for the process (jemalloc and a 32 MiB reader stack included).
const MEMORY: u64 = 1 << 30;

struct Outcome {
    /// None: killed at the timeout.
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn run(args: &[&str], input: Vec<u8>) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_randomsecret"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("the randomsecret binary starts");
    let mut stdin = child.stdin.take().unwrap();
    // The child may stop reading (an error, a size limit): a broken pipe is fine.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let _ = writer.join();
    Outcome {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        took,
    }
}

/// What is wrong with an outcome, given the first line of the `.expect`
/// file and the exact stdout that follows it, if any.
fn judge(outcome: &Outcome, expect: &str) -> Option<String> {
    let Some(status) = outcome.status else {
        return Some(format!("still running after {TIMEOUT:?}: killed"));
    };
    if outcome.stderr.contains("panicked at") {
        return Some(format!("panicked: {}", outcome.stderr));
    }
    let (first, exact) = expect.split_once('\n').unwrap_or((expect, ""));
    if first.trim_end() == "ok" {
        if !status.success() {
            return Some(format!("expected ok, got {status}: {}", outcome.stderr));
        }
        if !exact.is_empty() && outcome.stdout != exact {
            return Some(format!(
                "stdout differs:\n--- expected\n{exact}--- got\n{}",
                outcome.stdout
            ));
        }
        None
    } else if let Some(text) = first.strip_prefix("error: ") {
        if status.code() != Some(1) {
            return Some(format!(
                "expected an error (exit 1), got {status}: {}",
                outcome.stderr
            ));
        }
        let all = format!("{}{}", outcome.stdout, outcome.stderr);
        (!all.contains(text)).then(|| format!("{text:?} not in:\n{all}"))
    } else {
        Some(format!("unreadable .expect first line {first:?}"))
    }
}

fn corpus(surface: &str, args: &[&str]) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/hostile")
        .join(surface);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    for case in &cases {
        let input = std::fs::read(case).unwrap();
        let expect = std::fs::read_to_string(case.with_extension("expect"))
            .unwrap_or_else(|e| panic!("{}: no .expect ({e})", case.display()));
        let outcome = run(args, input);
        if let Some(problem) = judge(&outcome, &expect) {
            failures.push(format!(
                "{} ({:?}): {problem}",
                case.display(),
                outcome.took
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    cases.len()
}

#[test]
fn resolve_survives_hostile_input() {
    assert!(corpus("resolve", &["resolve"]) >= 25);
}

#[test]
fn kustomize_survives_hostile_input() {
    assert!(corpus("kustomize", &["kustomize"]) >= 15);
}

/// Input beyond the documented limit (16 MiB) is refused before it is
/// parsed: generated here rather than kept as a fixture.
#[test]
fn input_beyond_the_size_limit_is_refused() {
    let mut big = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: [".to_vec();
    big.extend(b"1,".repeat(17 << 19));
    big.extend(b"1]}\n");
    for args in [&["resolve"][..], &["kustomize"], &["resolve", "-f", "-"]] {
        let outcome = run(args, big.clone());
        assert_eq!(
            judge(&outcome, "error: larger than 16 MiB"),
            None,
            "{args:?}"
        );
        assert!(outcome.took < Duration::from_secs(5), "{:?}", outcome.took);
    }
}

/// The runner itself: a timeout, a panic and a wrong outcome are failures.
#[test]
fn the_judge_fails_what_it_should() {
    let ok = |code: i32| {
        use std::os::unix::process::ExitStatusExt;
        Some(ExitStatus::from_raw(code << 8))
    };
    let outcome = |status, stdout: &str, stderr: &str| Outcome {
        status,
        stdout: stdout.into(),
        stderr: stderr.into(),
        took: Duration::ZERO,
    };
    assert!(judge(&outcome(None, "", ""), "ok").is_some());
    assert!(
        judge(
            &outcome(ok(101), "", "thread 'main' panicked at src/x.rs"),
            "error: x"
        )
        .is_some()
    );
    assert!(judge(&outcome(ok(0), "a\n", ""), "ok\nb\n").is_some());
    assert!(judge(&outcome(ok(0), "a\n", ""), "ok\na\n").is_none());
    assert!(judge(&outcome(ok(1), "", "bad thing"), "error: good").is_some());
    assert!(judge(&outcome(ok(1), "", "bad thing"), "error: bad").is_none());
    assert!(judge(&outcome(ok(0), "", ""), "error: bad").is_some());
}
