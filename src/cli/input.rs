//! Where the CLI's manifests come from: standard input, files and folders,
//! as `kubectl -f` reads them (`-f a.yaml -f dir/`, `-R` into subfolders).

use crate::gitops::{self, manifests::ManifestError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One source of YAML: its text, and how errors name it.
#[derive(Debug, PartialEq, Eq)]
pub struct Source {
    /// The path as given or found (`dir/a.yaml`), `standard input` for
    /// `-f -`; None for standard input read because no -f was given, which
    /// errors do not name (as `randomsecret name < x.yaml` always did).
    pub name: Option<String>,
    pub text: String,
}

impl Source {
    /// How an error about another source names this one.
    pub fn shown(&self) -> String {
        self.name.clone().unwrap_or_else(|| "standard input".into())
    }

    /// An error about this source's YAML:
    /// `FILE: document 2: RandomSecret db: unknown field spec.rotaton: ...`.
    pub fn error(&self, e: ManifestError) -> String {
        match &self.name {
            Some(name) => format!("{name}: {e}"),
            None => e.to_string(),
        }
    }
}

/// Extensions of the files a folder contributes (kubectl's list).
const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// The files that `paths` name, in order: a file as given (any extension),
/// `-` as standard input (once at most), a folder as its `.json`, `.yaml`
/// and `.yml` files in name order, and with `recursive` its subfolders' too
/// (symbolic links to folders are not followed, as kubectl does not). No
/// path at all is standard input.
pub fn files(paths: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, String> {
    if paths.is_empty() {
        return Ok(vec![PathBuf::from("-")]);
    }
    let stdin = paths.iter().filter(|p| p.as_os_str() == "-").count();
    if stdin > 1 {
        return Err("standard input (-) can be read once only".into());
    }
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            out.push(path.clone());
            continue;
        }
        let meta =
            std::fs::metadata(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        if !meta.is_dir() {
            out.push(path.clone());
            continue;
        }
        let before = out.len();
        let mut skipped_folders = false;
        walk(path, recursive, &mut out, &mut skipped_folders)?;
        if out.len() == before {
            let hint = if skipped_folders && !recursive {
                " (its subfolders are read with -R)"
            } else {
                ""
            };
            return Err(format!(
                "{}: no .json, .yaml or .yml file in this folder{hint}",
                path.display()
            ));
        }
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    recursive: bool,
    out: &mut Vec<PathBuf>,
    skipped_folders: &mut bool,
) -> Result<(), String> {
    let read = |e: std::io::Error| format!("reading {}: {e}", dir.display());
    let mut entries = std::fs::read_dir(dir)
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        // file_type does not follow a symbolic link: a link to a folder is
        // neither read nor walked (no cycles); a link to a file is read.
        let kind = entry.file_type().map_err(read)?;
        if kind.is_dir() {
            if recursive {
                walk(&path, recursive, out, skipped_folders)?;
            } else {
                *skipped_folders = true;
            }
        } else if has_manifest_extension(&path)
            && std::fs::metadata(&path).is_ok_and(|m| m.is_file())
        {
            out.push(path);
        }
    }
    Ok(())
}

fn has_manifest_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// [`files`], each read ([`read`]).
pub fn sources(paths: &[PathBuf], recursive: bool) -> Result<Vec<Source>, String> {
    if paths.is_empty() {
        let text = read(None)?;
        return Ok(vec![Source { name: None, text }]);
    }
    files(paths, recursive)?
        .iter()
        .map(|p| {
            Ok(Source {
                name: Some(shown(p)),
                text: read(Some(p))?,
            })
        })
        .collect()
}

fn shown(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "standard input".into()
    } else {
        path.display().to_string()
    }
}

/// The YAML to read: at most `gitops::yaml::MAX_INPUT` bytes, UTF-8.
pub fn read(file: Option<&Path>) -> Result<String, String> {
    let (what, reader): (String, Box<dyn Read>) = match file {
        None => ("standard input".into(), Box::new(std::io::stdin())),
        Some(p) if p.as_os_str() == "-" => ("standard input".into(), Box::new(std::io::stdin())),
        Some(p) => (
            p.display().to_string(),
            Box::new(std::fs::File::open(p).map_err(|e| format!("reading {}: {e}", p.display()))?),
        ),
    };
    // One byte past the limit is enough to know it is too big.
    let mut bytes = Vec::new();
    reader
        .take(gitops::yaml::MAX_INPUT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading {what}: {e}"))?;
    gitops::yaml::check_size(bytes.len()).map_err(|e| format!("{what}: {e}"))?;
    String::from_utf8(bytes).map_err(|e| {
        let utf16 = matches!(e.as_bytes(), [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..]);
        format!(
            "{what} is not UTF-8 (invalid byte at {}){}",
            e.utf8_error().valid_up_to(),
            if utf16 {
                ": it is UTF-16; convert it to UTF-8"
            } else {
                ""
            }
        )
    })
}

/// An error about the YAML read from `file` (`diff OLD NEW`; `-` is
/// standard input), naming it.
pub fn in_file(file: &Path, e: ManifestError) -> String {
    format!("{}: {e}", shown(file))
}

/// Several sources' outputs as one YAML stream: a `---` between two where
/// the second does not start with its own.
pub fn joined(outputs: &[String]) -> String {
    let mut out = String::new();
    for text in outputs.iter().filter(|t| !t.is_empty()) {
        if !out.is_empty() {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if !text.trim_start_matches('\u{feff}').starts_with("---") {
                out.push_str("---\n");
            }
        }
        out.push_str(text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own under the system's temporary folder, removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("rs-input-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
        fn file(&self, rel: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "a: 1\n").unwrap();
            p
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn rel(base: &Path, files: Vec<PathBuf>) -> Vec<String> {
        let strip = |p: PathBuf| p.strip_prefix(base).unwrap().display().to_string();
        files.into_iter().map(strip).collect()
    }

    #[test]
    fn a_folder_gives_its_manifests_in_name_order_and_subfolders_with_r() {
        let s = Scratch::new("walk");
        for f in [
            "b.yaml",
            "a.yml",
            "c.json",
            "notes.txt",
            "README.md",
            "sub/d.yaml",
            "sub/deeper/e.yaml",
        ] {
            s.file(f);
        }
        let top = files(std::slice::from_ref(&s.0), false).unwrap();
        assert_eq!(rel(&s.0, top), ["a.yml", "b.yaml", "c.json"]);
        let all = files(std::slice::from_ref(&s.0), true).unwrap();
        assert_eq!(
            rel(&s.0, all),
            [
                "a.yml",
                "b.yaml",
                "c.json",
                "sub/d.yaml",
                "sub/deeper/e.yaml"
            ]
        );
    }

    #[test]
    fn files_and_folders_keep_the_order_given_and_a_named_file_any_extension() {
        let s = Scratch::new("order");
        let named = s.file("x/manifest.txt");
        s.file("y/a.yaml");
        let got = files(&[s.0.join("y"), named, PathBuf::from("-")], false).unwrap();
        assert_eq!(got[0], s.0.join("y/a.yaml"));
        assert_eq!(got[1], s.0.join("x/manifest.txt"));
        assert_eq!(got[2], PathBuf::from("-"));
        assert_eq!(files(&[], false).unwrap(), [PathBuf::from("-")]);
    }

    #[test]
    fn refusals_say_what_to_do() {
        let s = Scratch::new("refuse");
        s.file("only/sub/a.yaml");
        let e = files(&[s.0.join("only")], false).unwrap_err();
        assert!(
            e.ends_with(
                "no .json, .yaml or .yml file in this folder (its subfolders are read with -R)"
            ),
            "{e}"
        );
        assert!(files(&[s.0.join("only")], true).is_ok());
        let e = files(&["-".into(), "-".into()], false).unwrap_err();
        assert_eq!(e, "standard input (-) can be read once only");
        let e = files(&[s.0.join("missing.yaml")], false).unwrap_err();
        assert!(
            e.starts_with(&format!("reading {}", s.0.join("missing.yaml").display())),
            "{e}"
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_link_to_a_folder_is_not_walked() {
        let s = Scratch::new("link");
        s.file("real/a.yaml");
        std::os::unix::fs::symlink(s.0.join("real"), s.0.join("real/loop")).unwrap();
        let got = files(&[s.0.join("real")], true).unwrap();
        assert_eq!(rel(&s.0, got), ["real/a.yaml"]);
    }

    #[test]
    fn joined_streams_are_separated_once() {
        let parts = ["a: 1".to_string(), "b: 2\n".into(), "---\nc: 3\n".into()];
        assert_eq!(joined(&parts), "a: 1\n---\nb: 2\n---\nc: 3\n");
        assert_eq!(joined(&["x: 1\n".into()]), "x: 1\n");
    }
}
