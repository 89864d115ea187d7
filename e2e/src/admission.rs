//! AdmissionReviews sent straight to a controller's webhook (not through
//! the apiserver), as anything that can reach its port could: maximal ones
//! in a flood from many clients, a slow client, and the controller's peak
//! memory meanwhile. Used by the webhook suite and by `make bench`.
//!
//! The clients are `curl` and `openssl s_client` processes (the e2e crate
//! has no TLS client of its own), so the flood's memory is theirs, not the
//! test's, and the controller's is read from `/proc/PID/status`
//! ([`crate::process`]).

use anyhow::{Context, Result, ensure};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A review of about `bytes` bytes: an UPDATE of a labelled, annotated Secret
/// whose object and old object each hold many small keys, the costliest
/// shape to parse whole (a map entry per 20 bytes of body).
pub fn big_review(uid: &str, bytes: usize) -> Vec<u8> {
    let secret = |out: &mut Vec<u8>, budget: usize| {
        out.extend_from_slice(
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"flood","namespace":"flood","labels":{"randomsecret.io/managed":"true"},"annotations":{"randomsecret.io/generate":"password"}},"data":{"#,
        );
        let start = out.len();
        let mut i = 0u64;
        while out.len() - start + 20 < budget {
            if i > 0 {
                out.push(b',');
            }
            write!(out, r#""k{i:010}":"YWI=""#).expect("a Vec takes every write");
            i += 1;
        }
        out.extend_from_slice(b"}}");
    };
    let mut out = Vec::with_capacity(bytes + 1024);
    write!(
        out,
        r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"{uid}","kind":{{"group":"","version":"v1","kind":"Secret"}},"resource":{{"group":"","version":"v1","resource":"secrets"}},"namespace":"flood","operation":"UPDATE","userInfo":{{"username":"flood"}},"object":"#
    )
    .expect("a Vec takes every write");
    let half = bytes.saturating_sub(600) / 2;
    secret(&mut out, half);
    out.extend_from_slice(br#","oldObject":"#);
    secret(&mut out, half);
    out.extend_from_slice(br#","dryRun":false}}"#);
    out
}

/// A small, ordinary review: a CREATE of an annotated Secret lacking its key.
pub fn small_review(uid: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Secret"},
            "resource": {"group": "", "version": "v1", "resource": "secrets"},
            "namespace": "flood", "operation": "CREATE",
            "userInfo": {"username": "flood"},
            "object": {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "small", "namespace": "flood",
                    "labels": {"randomsecret.io/managed": "true"},
                    "annotations": {"randomsecret.io/generate": "password"}}},
            "dryRun": true,
        }
    }))
    .expect("JSON")
}

/// Writes `body` to a file in `dir` (curl reads bodies from files).
pub fn body_file(dir: &Path, name: &str, body: &[u8]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(name);
    std::fs::write(&path, body)?;
    Ok(path)
}

/// One POST of the file to `https://127.0.0.1:<port>/mutate` (certificate
/// not checked): the HTTP status (0 when there was none: the connection
/// was cut) and the response body.
pub fn post(port: u16, body: &Path, max_seconds: u64) -> Result<(u16, Vec<u8>)> {
    let out = Command::new("curl")
        .args([
            "-sk",
            "--max-time",
            &max_seconds.to_string(),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
        ])
        .arg(format!("@{}", body.display()))
        .args(["-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}/mutate"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .context("running curl")?;
    let text = out.stdout;
    let cut = text.iter().rposition(|b| *b == b'\n').unwrap_or(0);
    let code = std::str::from_utf8(&text[cut..])
        .unwrap_or_default()
        .trim()
        .parse()
        .unwrap_or(0);
    Ok((code, text[..cut].to_vec()))
}

/// What a flood came to.
#[derive(Debug, Default, Clone)]
pub struct Flood {
    /// (status, count), for every body file sent.
    pub statuses: Vec<(PathBuf, u16, usize)>,
    pub took: Duration,
}

impl Flood {
    /// How many answers to `body` had `status`.
    pub fn count(&self, body: &Path, status: u16) -> usize {
        self.statuses
            .iter()
            .filter(|(b, s, _)| b == body && *s == status)
            .map(|(_, _, n)| n)
            .sum()
    }

    /// Every status `body` got.
    pub fn of(&self, body: &Path) -> Vec<(u16, usize)> {
        self.statuses
            .iter()
            .filter(|(b, _, _)| b == body)
            .map(|(_, s, n)| (*s, *n))
            .collect()
    }
}

/// `clients` concurrent clients, each sending every file of `bodies` in
/// turn, `rounds` times.
pub fn flood(port: u16, bodies: &[PathBuf], clients: usize, rounds: usize) -> Result<Flood> {
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let bodies = bodies.to_vec();
            std::thread::spawn(move || -> Result<Vec<(PathBuf, u16)>> {
                let mut got = Vec::new();
                for r in 0..rounds {
                    for i in 0..bodies.len() {
                        // Each client starts at another body: big and small at once.
                        let b = &bodies[(i + c + r) % bodies.len()];
                        got.push((b.clone(), post(port, b, 60)?.0));
                    }
                }
                Ok(got)
            })
        })
        .collect();
    let mut flood = Flood::default();
    for t in threads {
        for (body, status) in t.join().expect("a flood client panicked")? {
            match flood
                .statuses
                .iter_mut()
                .find(|(b, s, _)| *b == body && *s == status)
            {
                Some(e) => e.2 += 1,
                None => flood.statuses.push((body, status, 1)),
            }
        }
    }
    flood.took = started.elapsed();
    Ok(flood)
}

/// A client that opens a TLS connection to the webhook, sends `prefix` (part
/// of a request) and then nothing, holding the connection open: how long
/// until the webhook closes it (None: still open after `wait`).
pub fn slow_client(port: u16, prefix: &[u8], wait: Duration) -> Result<Option<Duration>> {
    let mut child = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("running openssl s_client")?;
    let started = Instant::now();
    let mut stdin = child.stdin.take().context("stdin")?;
    stdin.write_all(prefix)?;
    stdin.flush()?;
    // stdin stays open: s_client ends only when the webhook closes.
    let closed = loop {
        if child.try_wait()?.is_some() {
            break Some(started.elapsed());
        }
        if started.elapsed() > wait {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Ok(closed)
}

/// The `response` of an AdmissionReview answer: its uid and whether it allowed.
pub fn answer_of(body: &[u8]) -> Result<(String, bool, serde_json::Value)> {
    let v: serde_json::Value = serde_json::from_slice(body).context("the answer is not JSON")?;
    let r = v["response"].clone();
    ensure!(r.is_object(), "no response in the answer");
    Ok((
        r["uid"].as_str().unwrap_or_default().to_string(),
        r["allowed"].as_bool() == Some(true),
        r,
    ))
}
