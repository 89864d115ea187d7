//! `randomsecret name --explain` and `randomsecret diff` as a user runs them:
//! the built binary on two manifests of `testdata/cli/` that differ only in
//! `spec.rotation` of one RandomSecret. The expected names come from the
//! library, never from the output under test.

use randomsecret::gitops::manifests::versioned_names;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const OLD: &str = "testdata/cli/rotation-1.yaml";
const NEW: &str = "testdata/cli/rotation-2.yaml";
/// The static value of `db`: part of the name, never printed.
const STATIC_VALUE: &str = "static-user-never-printed";

fn file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The versioned names of a testdata file, computed by the library.
fn names(rel: &str) -> Vec<String> {
    let text = std::fs::read_to_string(file(rel)).unwrap();
    versioned_names(&text).unwrap()
}

/// Runs the binary (in the crate's folder) with `args` on `stdin`.
fn run(args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_randomsecret"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// Runs the binary with `args` on `stdin`; it must succeed.
fn randomsecret(args: &[&str], stdin: &str) -> String {
    let out = run(args, stdin);
    assert!(
        out.status.success(),
        "randomsecret {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn diff_names_the_changed_rotation_and_both_names() {
    let (old, new) = (names(OLD), names(NEW));
    assert_eq!(old.len(), 2);
    assert_ne!(old[0], new[0], "a rotation renames db");
    assert_eq!(old[1], new[1], "api did not change");
    let expected = format!(
        "RandomSecret db: {} -> {}\n  rotation: \"1\" -> \"2\"\n  values of the new version:\n    password: rotated: rotation 1 -> 2\nRandomSecret prod/api: {} (unchanged)\n",
        old[0], new[0], old[1]
    );
    let out = randomsecret(&["diff", OLD, NEW], "");
    assert_eq!(out, expected);
    assert!(!out.contains(STATIC_VALUE), "{out}");
    // Either side may be standard input.
    let old_text = std::fs::read_to_string(file(OLD)).unwrap();
    assert_eq!(randomsecret(&["diff", "-", NEW], &old_text), expected);
    // The other way round: the change is reversed.
    let back = randomsecret(&["diff", NEW, OLD], "");
    assert!(
        back.starts_with(&format!(
            "RandomSecret db: {} -> {}\n  rotation: \"2\" -> \"1\"\n",
            new[0], old[0]
        )),
        "{back}"
    );
}

/// The canonical lines of the block of `name` in `name --explain` output:
/// what follows `randomsecret.io/v1` up to the "not in the hash" line, each
/// without its `# field` comment.
fn canonical_block(out: &str, name: &str) -> Vec<(String, String)> {
    let block: Vec<&str> = out
        .lines()
        .skip_while(|l| *l != name)
        .skip_while(|l| l.trim() != "randomsecret.io/v1")
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("not in the hash"))
        .collect();
    block
        .iter()
        .map(|l| {
            let (line, field) = l.rsplit_once(" # ").unwrap_or((l, ""));
            (line.trim().to_string(), field.trim().to_string())
        })
        .collect()
}

#[test]
fn name_explain_shows_the_rotation_and_the_form_each_name_hashes() {
    for (rel, rotation) in [(OLD, "1"), (NEW, "2")] {
        let expected = names(rel);
        let out = randomsecret(&["name", "--explain", "-f", rel], "");
        assert!(out.starts_with(&format!("{}\n", expected[0])), "{out}");
        assert!(out.contains(&format!("\n{}\n", expected[1])), "{out}");
        let (_, hash) = expected[0].rsplit_once('-').unwrap();
        assert!(
            out.contains(&format!(
                "RandomSecret db: base name \"db\" (spec.secretName, else metadata.name), hash {hash}\n"
            )),
            "{out}"
        );
        let db = canonical_block(&out, &expected[0]);
        assert!(
            db.contains(&(format!("rotation:1:{rotation}"), "rotation".to_string())),
            "{rel}: {db:?}"
        );
        assert!(!out.contains(STATIC_VALUE), "{out}");
        // api has no static value: its lines, as printed, are the canonical
        // form, and hash to its name.
        let api = canonical_block(&out, &expected[1]);
        let canonical: String = std::iter::once("randomsecret.io/v1".to_string())
            .chain(api.iter().map(|(l, _)| l.clone()))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            format!("api-{}", randomsecret::version::hash_canonical(&canonical)),
            expected[1],
            "{canonical}"
        );
        assert!(api.iter().any(|(_, f)| f == "keys.token"), "{api:?}");
    }
}

/// `crd --help` names every kind that `crd` prints (it once listed three of four).
#[test]
fn crd_help_names_every_printed_kind() {
    let help = randomsecret(&["crd", "--help"], "");
    let crds = randomsecret(&["crd"], "");
    let kinds: Vec<&str> = crds
        .lines()
        .filter_map(|l| l.trim().strip_prefix("kind: "))
        .filter(|k| *k != "CustomResourceDefinition")
        .collect();
    assert_eq!(kinds.len(), 5, "the kinds `crd` prints: {kinds:?}");
    for kind in kinds {
        assert!(
            help.contains(&format!("{kind},")) || help.contains(&format!("{kind})")),
            "`crd --help` does not name {kind}: {help}"
        );
    }
}

/// Runs the binary (in the crate's folder) with `args` on `stdin`; it must
/// fail with exit status 1. Returns its stderr and stdout.
fn randomsecret_fails(args: &[&str], stdin: &str) -> (String, String) {
    let out = run(args, stdin);
    let (stderr, stdout) = (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "randomsecret {args:?} should fail: {stderr}"
    );
    (stderr, stdout)
}

/// `OLD` with `rotation:` of db misspelled `rotaton:`.
fn with_typo() -> String {
    let text = std::fs::read_to_string(file(OLD)).unwrap();
    let typo = text.replace("  rotation: \"1\"", "  rotaton: \"1\"");
    assert_ne!(typo, text);
    typo
}

const ROTATON: &str =
    "document 1: RandomSecret db: unknown field spec.rotaton: did you mean spec.rotation?";

/// Issue 32: `name`, `resolve`, the KRM function and `diff` refuse an
/// unknown field (the apiserver refuses it too, or prunes it with
/// --validate=false) with its path and the nearest valid name, and exit 1.
#[test]
fn every_command_refuses_an_unknown_field_with_its_path_and_the_nearest_name() {
    let typo = with_typo();
    let want = format!("randomsecret: {ROTATON}\n");
    assert_eq!(randomsecret_fails(&["name"], &typo).0, want);
    assert_eq!(randomsecret_fails(&["name", "--explain"], &typo).0, want);
    assert_eq!(randomsecret_fails(&["resolve"], &typo).0, want);
    // A named file is named in the error.
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rotaton.yaml");
    std::fs::write(&path, &typo).unwrap();
    let shown = path.display().to_string();
    assert_eq!(
        randomsecret_fails(&["name", "-f", &shown], "").0,
        format!("randomsecret: {shown}: {ROTATON}\n")
    );
    assert_eq!(
        randomsecret_fails(&["resolve", "-f", &shown], "").0,
        format!("randomsecret: {shown}: {ROTATON}\n")
    );
    // diff: whichever side has it, named.
    assert_eq!(
        randomsecret_fails(&["diff", OLD, &shown], "").0,
        format!("randomsecret: {shown}: {ROTATON}\n")
    );
    assert_eq!(
        randomsecret_fails(&["diff", "-", NEW], &typo).0,
        format!("randomsecret: standard input: {ROTATON}\n")
    );
    // The KRM function: the error on stderr and in the ResourceList's results.
    let items: String = typo
        .split("\n---\n")
        .map(|d| {
            let body: Vec<&str> = d.lines().filter(|l| !l.starts_with('#')).collect();
            format!("- {}\n", body.join("\n  "))
        })
        .collect();
    let list = format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}");
    let (stderr, stdout) = randomsecret_fails(&["kustomize"], &list);
    assert_eq!(stderr, want);
    let out: serde_json::Value = randomsecret::gitops::yaml::read(&stdout).unwrap();
    assert_eq!(out["results"][0]["message"], ROTATON, "{stdout}");
    assert_eq!(
        out["results"][0]["field"]["path"], "spec.rotaton",
        "{stdout}"
    );
    assert_eq!(out["results"][0]["resourceRef"]["name"], "db", "{stdout}");
    // Nothing near: no suggestion.
    let far = with_typo().replace("rotaton:", "colour:");
    assert_eq!(
        randomsecret_fails(&["name"], &far).0,
        "randomsecret: document 1: RandomSecret db: unknown field spec.colour\n"
    );
}

/// Issue 32: a manifest of the original operator (examples/basic/legacy.yaml
/// before its apiVersion changed) is not passed by in silence: `name` says
/// what to change, and the name its Secret will then have.
#[test]
fn name_on_the_original_operators_manifest_says_what_to_change() {
    let migrated = std::fs::read_to_string(file("examples/basic/legacy.yaml")).unwrap();
    let original = migrated.replace(
        "apiVersion: randomsecret.io/v1",
        "apiVersion: secret.a-cup-of.coffee/v1",
    );
    assert_ne!(original, migrated);
    let name = versioned_names(&migrated).unwrap().remove(0);
    assert!(name.starts_with("secret-name-"), "{name}");
    let want = format!(
        "randomsecret: document 1: RandomSecret random-secret: apiVersion \"secret.a-cup-of.coffee/v1\" is the original operator's: change it to randomsecret.io/v1 (the spec applies as it is); its Secret will be named {name}, not secret-name: see docs/src/annotation-mode.md#migrating-from-the-original-operator\n"
    );
    assert_eq!(randomsecret_fails(&["name"], &original).0, want);
    assert_eq!(randomsecret_fails(&["resolve"], &original).0, want);
    assert_eq!(randomsecret(&["name"], &migrated), format!("{name}\n"));
}

/// A folder of its own under cargo's test temporary folder, emptied first.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const DEPLOYMENT_USING_DB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\n\
spec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec:\n      containers:\n      - name: c\n        image: x\n        envFrom: [{secretRef: {name: db}}]\n";

#[test]
fn name_and_resolve_read_several_files_and_folders_as_kubectl_f_does() {
    let dir = scratch("sources");
    // rotation-1.yaml holds db and prod/api; the Deployment that uses db is
    // in a subfolder, read with -R only.
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    std::fs::copy(file(OLD), dir.join("secrets.yaml")).unwrap();
    std::fs::write(dir.join("apps/app.yaml"), DEPLOYMENT_USING_DB).unwrap();
    std::fs::write(dir.join("notes.txt"), "not yaml: [").unwrap();
    let d = dir.display().to_string();
    let apps = dir.join("apps").display().to_string();
    let want = names(OLD);

    // name: the folder's RandomSecrets, then the file's (both given with -f).
    let other = scratch("sources-other").join("cache.yaml");
    let other_text = "apiVersion: randomsecret.io/v1\nkind: RandomSecret\nmetadata: {name: cache}\nspec: {length: 12}\n";
    std::fs::write(&other, other_text).unwrap();
    let o = other.display().to_string();
    let out = randomsecret(&["name", "-f", &d, "-f", &o], "");
    let mut expected = want.clone();
    expected.extend(versioned_names(other_text).unwrap());
    assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    // A base name in two sources is refused, naming both.
    let (err, _) = randomsecret_fails(&["name", "-f", OLD, "-f", NEW], "");
    assert!(
        err.contains(&format!("{NEW}: document 1: RandomSecret db"))
            && err.contains(&format!("as RandomSecret db in document 1 of {OLD}")),
        "{err}"
    );

    // resolve: a workload in one file, its RandomSecret in another.
    let out = randomsecret(&["resolve", "-f", &apps, "-f", OLD], "");
    assert!(out.contains(&format!("name: {}", want[0])), "{out}");
    assert!(
        out.contains("kind: Deployment") && out.contains("kind: RandomSecret"),
        "{out}"
    );
    // -R reads the subfolder: the same result from the parent folder.
    let recursive = randomsecret(&["resolve", "-R", "-f", &d], "");
    assert!(
        recursive.contains(&format!("name: {}", want[0])),
        "{recursive}"
    );
    // Without -R the subfolder is not read: nothing references db.
    let flat = randomsecret(&["resolve", "-f", &d], "");
    assert!(!flat.contains("kind: Deployment"), "{flat}");
    // The output is one stream that reads back as the sum of its sources.
    let again = randomsecret(&["name"], &recursive);
    assert_eq!(again.lines().collect::<Vec<_>>(), want);

    // An error names the file it is in, as found in the folder.
    std::fs::write(dir.join("apps/typo.yaml"), with_typo()).unwrap();
    let typo = dir.join("apps/typo.yaml").display().to_string();
    for cmd in ["name", "resolve"] {
        let (err, _) = randomsecret_fails(&[cmd, "-R", "-f", &d], "");
        assert_eq!(err, format!("randomsecret: {typo}: {ROTATON}\n"), "{cmd}");
    }
    // A folder without manifests says how to read its subfolders.
    let empty = scratch("sources-nested");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    std::fs::write(empty.join("sub/a.yaml"), "a: 1\n").unwrap();
    let e = empty.display().to_string();
    let (err, _) = randomsecret_fails(&["name", "-f", &e], "");
    assert_eq!(
        err,
        format!(
            "randomsecret: {e}: no .json, .yaml or .yml file in this folder (its subfolders are read with -R)\n"
        )
    );
}
